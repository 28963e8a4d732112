"""The stdio transport: line in, line out, exit on EOF; both wire generations."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from mcp_endpoint.dispatch.stdio import StdioState
from mcp_endpoint.handlers.identity import anonymous
from mcp_endpoint.transport.stdio import serve

pytestmark = pytest.mark.django_db(transaction=True)

META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def lines(*messages):
    return io.BytesIO(b"".join((m if isinstance(m, bytes) else json.dumps(m).encode()) + b"\n" for m in messages))


async def run(stdin):
    out = io.BytesIO()
    await serve(stdin, out, StdioState(identity=anonymous()))
    return [json.loads(line) for line in out.getvalue().splitlines()]


async def test_legacy_session_over_stdio_answers_in_order_and_stops_at_eof(registry_data):
    replies = await run(lines(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/get", "params": {"name": "test_simple_prompt"}},
        {"jsonrpc": "2.0", "id": 3, "method": "resources/subscribe", "params": {"uri": "test://watched-resource"}},
        {"jsonrpc": "2.0", "id": 4, "method": "ping"},
    ))
    assert [r["id"] for r in replies] == [1, 2, 3, 4]
    assert replies[0]["result"]["protocolVersion"] == "2025-06-18"
    assert replies[1]["result"]["messages"][0]["content"]["text"] == "This is a simple prompt for testing."
    assert replies[2]["result"] == {} and replies[3]["result"] == {}


async def test_a_2024_11_05_host_connects_and_gets_only_what_that_revision_defines(registry_data):
    """Older stdio hosts (the first SDK releases) ask for 2024-11-05 and refuse any other answer."""
    replies = await run(lines(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                    "clientInfo": {"name": "old", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "prompts/list"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/list"},
        {"jsonrpc": "2.0", "id": 4, "method": "prompts/get", "params": {"name": "test_prompt_with_image"}},
    ))
    init = replies[0]["result"]
    assert init["protocolVersion"] == "2024-11-05"
    assert "completions" not in init["capabilities"] and "title" not in init["serverInfo"]
    assert all("title" not in p for p in replies[1]["result"]["prompts"])
    assert all("annotations" not in t and "title" not in t for t in replies[2]["result"]["tools"])
    assert replies[3]["result"]["messages"][0]["content"]["type"] == "image"


def test_audio_blocks_become_text_before_2025_03_26():
    from mcp_endpoint.wire.shapes import shape_block

    audio = {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"}
    assert shape_block(audio, "2024-11-05")["type"] == "text"
    assert shape_block(audio, "2025-03-26") == audio


async def test_modern_messages_over_stdio_carry_result_type(registry_data):
    replies = await run(lines(
        {"jsonrpc": "2.0", "id": "d", "method": "server/discover", "params": {"_meta": META}},
        {"jsonrpc": "2.0", "id": "r", "method": "resources/read", "params": {"uri": "test://missing", "_meta": META}},
    ))
    assert replies[0]["result"]["resultType"] == "complete" and replies[0]["result"]["cacheScope"] == "public"
    assert replies[1]["error"]["code"] == -32602 and replies[1]["error"]["data"]["uri"] == "test://missing"


async def test_garbage_line_gets_a_parse_error_and_serving_continues(registry_data):
    replies = await run(lines(b"{nope", {"jsonrpc": "2.0", "id": 1, "method": "ping"}))
    assert replies[0]["error"]["code"] == -32700 and replies[1]["result"] == {}


async def test_batches_only_at_2025_03_26(registry_data):
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]
    replies = await run(lines(batch))
    assert replies[0] == [{"jsonrpc": "2.0", "id": 1, "result": {}}, {"jsonrpc": "2.0", "id": 2, "result": {}}]
    replies = await run(lines(
        {"jsonrpc": "2.0", "id": 0, "method": "initialize",
         "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
        batch))
    assert replies[1]["error"]["code"] == -32600


async def test_stdio_batches_have_the_same_bounds_as_http(registry_data, settings):
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "MAX_BATCH_LENGTH": 3, "MAX_BATCH_RESPONSE_BYTES": 120}
    replies = await run(lines([{"jsonrpc": "2.0", "id": n, "method": "ping"} for n in range(4)],
                              [{"jsonrpc": "2.0", "id": n, "method": "prompts/list"} for n in range(3)]))
    assert replies[0]["error"]["code"] == -32600 and "at most 3 messages" in replies[0]["error"]["message"]
    assert [("result" in r, r["id"]) for r in replies[1]] == [(True, 0), (False, 1), (False, 2)]


def test_unknown_client_name_is_a_command_error(registry_data):
    with pytest.raises(CommandError):
        call_command("mcp_stdio", client="nobody")
