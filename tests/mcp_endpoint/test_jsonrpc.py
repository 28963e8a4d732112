import pytest

from mcp_endpoint.wire import errors, jsonrpc


def test_parse_body_rejects_malformed_json_with_parse_error():
    with pytest.raises(errors.ParseError) as info:
        jsonrpc.parse_body(b"{not json")
    assert info.value.code == -32700


def test_classify_tells_requests_notifications_and_responses_apart():
    assert jsonrpc.classify({"jsonrpc": "2.0", "id": 7, "method": "ping"}).kind == "request"
    assert jsonrpc.classify({"jsonrpc": "2.0", "method": "notifications/initialized"}).kind == "notification"
    assert jsonrpc.classify({"jsonrpc": "2.0", "id": 7, "result": {}}).kind == "response"


@pytest.mark.parametrize("bad", [
    [], {"id": 1, "method": "ping"}, {"jsonrpc": "1.0", "id": 1, "method": "ping"},
    {"jsonrpc": "2.0", "id": 1, "method": 5}, {"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]},
    {"jsonrpc": "2.0", "id": None, "method": "ping"}, {"jsonrpc": "2.0", "id": True, "method": "ping"},
])
def test_classify_rejects_invalid_envelopes(bad):
    with pytest.raises(errors.InvalidRequest):
        jsonrpc.classify(bad)


def test_missing_params_read_as_empty_object():
    assert jsonrpc.classify({"jsonrpc": "2.0", "id": "a", "method": "ping"}).params == {}


def test_raw_result_is_spliced_verbatim_into_the_envelope():
    body = jsonrpc.encode_result("abc", jsonrpc.RawJSON(b'{"x":1}'))
    assert jsonrpc.loads(body) == {"jsonrpc": "2.0", "id": "abc", "result": {"x": 1}}


def test_error_envelope_carries_code_message_and_data():
    body = jsonrpc.encode_error(3, errors.InvalidParams("nope", data={"uri": "a://b"}))
    assert jsonrpc.loads(body) == {"jsonrpc": "2.0", "id": 3,
                                   "error": {"code": -32602, "message": "nope", "data": {"uri": "a://b"}}}


def test_encoding_keeps_non_ascii_text_intact():
    assert jsonrpc.loads(jsonrpc.dumps({"t": "Grüße ✓"})) == {"t": "Grüße ✓"}


def test_batch_encoding_is_a_json_array():
    assert jsonrpc.loads(jsonrpc.encode_batch([b"1", b"2"])) == [1, 2]
