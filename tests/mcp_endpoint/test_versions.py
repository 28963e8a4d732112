import base64

import pytest

from mcp_endpoint.wire import errors
from mcp_endpoint.wire.versions import (
    check_modern_headers,
    decode_header_value,
    headers_from_asgi,
    negotiate_legacy,
)


def test_negotiation_echoes_supported_legacy_versions():
    for v in ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"):
        assert negotiate_legacy(v) == v


@pytest.mark.parametrize("requested", ["2026-07-28", "1999-01-01", None, 42])
def test_negotiation_never_answers_the_modern_revision(requested):
    assert negotiate_legacy(requested) == "2025-11-25"


def test_base64_sentinel_is_decoded_before_comparison():
    encoded = "=?base64?" + base64.b64encode("résumé://ü".encode()).decode() + "?="
    assert decode_header_value(encoded) == "résumé://ü"
    assert decode_header_value("plain") == "plain"


def test_bad_base64_sentinel_is_a_header_mismatch():
    with pytest.raises(errors.HeaderMismatch):
        decode_header_value("=?base64?***?=")


def test_control_characters_in_header_values_are_a_header_mismatch():
    with pytest.raises(errors.HeaderMismatch):
        decode_header_value("abc\x01")


def test_method_and_name_headers_must_mirror_the_body():
    headers = {"mcp-method": "prompts/get", "mcp-name": "greet"}
    check_modern_headers(headers, "prompts/get", {"name": "greet"}, is_request=True)
    with pytest.raises(errors.HeaderMismatch):
        check_modern_headers(headers, "prompts/get", {"name": "other"}, is_request=True)
    with pytest.raises(errors.HeaderMismatch):
        check_modern_headers({"mcp-method": "prompts/get"}, "prompts/get", {"name": "greet"}, is_request=True)
    with pytest.raises(errors.HeaderMismatch):
        check_modern_headers({"mcp-method": "prompts/list"}, "prompts/get", {"name": "greet"}, is_request=True)


def test_name_header_for_resources_read_mirrors_the_uri_even_base64_encoded():
    uri = "test://ünïcode"
    headers = {"mcp-method": "resources/read",
               "mcp-name": "=?base64?" + base64.b64encode(uri.encode()).decode() + "?="}
    check_modern_headers(headers, "resources/read", {"uri": uri}, is_request=True)


def test_duplicated_routing_headers_are_reported():
    headers, dup = headers_from_asgi([(b"Mcp-Method", b"a"), (b"mcp-method", b"b"), (b"X-Other", b"1")])
    assert dup == "mcp-method"
    assert headers["x-other"] == "1"
    _, none = headers_from_asgi([(b"accept", b"a"), (b"accept", b"b")])
    assert none is None


@pytest.mark.parametrize(("meta", "named"), [
    ({}, "io.modelcontextprotocol/protocolVersion, io.modelcontextprotocol/clientCapabilities"),
    ({"io.modelcontextprotocol/protocolVersion": "2026-07-28"}, "io.modelcontextprotocol/clientCapabilities"),
    ({"io.modelcontextprotocol/clientCapabilities": {}}, "io.modelcontextprotocol/protocolVersion"),
])
def test_the_ladder_names_every_missing_meta_key_and_answers_400(meta, named):
    from mcp_endpoint.dispatch.ladder import modern_context
    from mcp_endpoint.wire.context import Identity
    from mcp_endpoint.wire.jsonrpc import Message

    msg = Message("request", "prompts/get", 1, {"name": "x", "_meta": meta}, {})
    with pytest.raises(errors.InvalidParams) as caught:
        modern_context(msg, Identity(viewer=None))
    assert caught.value.message == "params._meta is missing required key(s): " + named
    assert caught.value.http_status == 400
