from mcp_endpoint.wire import sse


def test_event_frames_data_with_message_event_name():
    assert sse.event(b'{"a":1}') == b'event: message\ndata: {"a":1}\n\n'


def test_event_splits_multiline_payload_into_data_lines():
    assert sse.event(b"a\nb", event_name=None) == b"data: a\ndata: b\n\n"


def test_event_id_comes_first():
    assert sse.event(b"x", event_id="7").startswith(b"id: 7\n")


def test_keepalive_is_a_comment_line():
    assert sse.KEEPALIVE.startswith(b":") and sse.KEEPALIVE.endswith(b"\n\n")
    assert sse.comment("hi") == b": hi\n\n"
