"""A malformed 2026-07-28 request gets the same JSON-RPC error over stdio as over HTTP.

Both transports validate through one ladder (dispatch/ladder.py). Each request below goes to the
ASGI app with the headers a conforming client sends along with it (MCP-Protocol-Version, Mcp-Method
and Mcp-Name mirroring the body), and as one line to the stdio transport; the error code, message
and data must match. The ladder's header rungs exist only on HTTP, so no case here disagrees with
its own headers; and on stdio a message whose params carry no ``_meta`` protocolVersion speaks the
legacy wire, so every case carries one (or is server/discover, which only 2026-07-28 has).
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from mcp_endpoint.dispatch.stdio import StdioState
from mcp_endpoint.handlers.identity import anonymous
from mcp_endpoint.transport.consumers import McpHttpApp
from mcp_endpoint.transport.stdio import serve
from tests.mcp_endpoint.conftest import MODERN, call_asgi

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("anonymous_allowed")]

VERSION = "io.modelcontextprotocol/protocolVersion"
CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"


def meta(version: Any = MODERN, capabilities: Any = None, *, drop: str | None = None) -> dict[str, Any]:
    out = {VERSION: version, CAPABILITIES: {} if capabilities is None else capabilities}
    if drop:
        del out[drop]
    return out


def request(method: str, params: Any, rid: Any = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}


ARGS_PROMPT = "test_prompt_with_arguments"  # two required arguments

CASES: dict[str, dict[str, Any]] = {
    "clientCapabilities not an object, arguments missing":
        request("prompts/get", {"name": ARGS_PROMPT, "_meta": meta(capabilities=[])}),
    "clientCapabilities a string, on a list":
        request("prompts/list", {"_meta": meta(capabilities="forms please")}),
    "clientCapabilities null, on server/discover":
        request("server/discover", {"_meta": {VERSION: MODERN, CAPABILITIES: None}}),
    "clientCapabilities missing":
        request("prompts/list", {"_meta": meta(drop=CAPABILITIES)}),
    "_meta missing, on server/discover":
        request("server/discover", {}),
    "_meta not an object, on server/discover":
        request("server/discover", {"_meta": "2026-07-28"}),
    "protocolVersion missing, on server/discover":
        request("server/discover", {"_meta": meta(drop=VERSION)}),
    "unsupported protocolVersion":
        request("prompts/list", {"_meta": meta("2099-01-01")}),
    "unknown method":
        request("prompts/delete", {"name": "x", "_meta": meta()}),
    "a method only the legacy wire has":
        request("resources/subscribe", {"uri": "test://static-text", "_meta": meta()}),
    "ping, which 2026-07-28 removed":
        request("ping", {"_meta": meta()}),
    "params not an object":
        request("prompts/list", [meta()]),
    "id of the wrong type":
        request("prompts/list", {"_meta": meta()}, rid=1.5),
    "name of the wrong type":
        request("prompts/get", {"name": 7, "_meta": meta()}),
    "arguments of the wrong type":
        request("prompts/get", {"name": ARGS_PROMPT, "arguments": ["a", "b"], "_meta": meta()}),
    "arguments missing":
        request("prompts/get", {"name": ARGS_PROMPT, "_meta": meta()}),
    "unknown prompt":
        request("prompts/get", {"name": "no-such-prompt", "_meta": meta()}),
    "unknown resource":
        request("resources/read", {"uri": "test://missing", "_meta": meta()}),
    "a listen filter of the wrong type":
        request("subscriptions/listen", {"notifications": ["prompts"], "_meta": meta()}),
    "a cursor of the wrong type":
        request("prompts/list", {"cursor": 3, "_meta": meta()}),
    "a completion without a ref":
        request("completion/complete", {"argument": {"name": "arg1", "value": "t"}, "_meta": meta()}),
}


def http_headers(message: dict[str, Any]) -> dict[str, str]:
    """What a conforming client sends along with `message`: headers that mirror its body."""
    params = message["params"] if isinstance(message["params"], dict) else {}
    version = params.get("_meta", {}).get(VERSION) if isinstance(params.get("_meta"), dict) else None
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "host": "127.0.0.1:8000", "mcp-method": message["method"],
               "mcp-protocol-version": version if isinstance(version, str) else MODERN}
    name = params.get("uri") if message["method"] == "resources/read" else params.get("name")
    if name is not None:
        headers["mcp-name"] = str(name)
    return headers


def error_of(reply: dict[str, Any]) -> Any:
    return reply.get("error", "a result, not an error")


async def over_http(message: dict[str, Any]) -> Any:
    response = await call_asgi(McpHttpApp(), "POST", http_headers(message), json.dumps(message).encode())
    return error_of(response.json())


async def over_stdio(messages: list[dict[str, Any]]) -> list[Any]:
    stdin = io.BytesIO(b"".join(json.dumps(m).encode() + b"\n" for m in messages))
    stdout = io.BytesIO()
    await serve(stdin, stdout, StdioState(identity=anonymous()))
    return [error_of(json.loads(line)) for line in stdout.getvalue().splitlines()]


async def test_malformed_2026_07_28_requests_get_the_same_error_over_stdio_and_http(registry_data):
    http = {case: await over_http(message) for case, message in CASES.items()}
    assert all("code" in error for error in http.values()), http  # every case is an error over HTTP
    stdio = dict(zip(CASES, await over_stdio(list(CASES.values())), strict=True))
    diverging = {case: {"http": http[case], "stdio": stdio[case]}
                 for case in CASES if stdio[case] != http[case]}
    assert diverging == {}
