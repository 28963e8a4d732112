"""SSE event ids: change-log positions on legacy GET streams (resumable), none on listen streams."""

from __future__ import annotations

import re

import pytest
from channels.testing import ApplicationCommunicator

from mcp_endpoint.transport.consumers import McpHttpApp
from tests.mcp_endpoint.conftest import asgi_scope, call_asgi, legacy_headers, modern_request, rpc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("anonymous_allowed")]

INIT = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}})


async def first_body(app, method, headers, body=b""):
    comm = ApplicationCommunicator(app, asgi_scope(method, headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await comm.receive_output(2)
    assert start["status"] == 200, start
    chunk = await comm.receive_output(2)
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)
    return chunk["body"]


async def session(app):
    response = await call_asgi(app, "POST", legacy_headers(version=None), INIT)
    sid = response.headers["mcp-session-id"]
    await call_asgi(app, "POST", legacy_headers(sid), rpc("resources/subscribe", {"uri": "test://static-text"}))
    return sid


async def test_a_get_stream_opens_with_an_id_only_priming_event(registry_data):
    app = McpHttpApp()
    sid = await session(app)
    body = await first_body(app, "GET", dict(legacy_headers(sid), accept="text/event-stream"))
    assert re.fullmatch(rb"retry: 10000\nid: \d+\ndata: \n\n", body), body


async def test_the_first_event_tells_clients_to_wait_long_enough_to_outlast_a_restart(registry_data, settings):
    """The official SDKs reconnect a GET stream twice, `retry:` apart (1 s without one), then give
    up for good: the priming event (or the first replayed one) carries STREAM_RETRY_MS."""
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "STREAM_RETRY_MS": 7000}
    app = McpHttpApp()
    sid = await session(app)
    body = await first_body(app, "GET", dict(legacy_headers(sid), accept="text/event-stream"))
    assert body.startswith(b"retry: 7000\nid: ")
    replayed = await first_body(app, "GET", dict(legacy_headers(sid), accept="text/event-stream",
                                                 **{"last-event-id": "not-a-position"}))
    assert replayed.startswith(b"retry: 7000\nid: ") and replayed.count(b"retry:") == 1


async def test_older_revisions_get_no_retry_field(registry_data):
    """2025-06-18 and earlier define no priming event, and their SDKs do not expect empty events."""
    app = McpHttpApp()
    init = rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "t", "version": "1"}})
    sid = (await call_asgi(app, "POST", legacy_headers(version=None), init)).headers["mcp-session-id"]
    body = await first_body(app, "GET", dict(legacy_headers(sid, version="2025-06-18"), accept="text/event-stream"))
    assert b"retry:" not in body


async def test_a_get_stream_resumed_from_an_unusable_id_replays_everything_with_ids(registry_data):
    app = McpHttpApp()
    sid = await session(app)
    body = await first_body(app, "GET", dict(legacy_headers(sid), accept="text/event-stream",
                                             **{"last-event-id": "not-a-position"}))
    events = body.decode().removeprefix("retry: 10000\n").split("\n\n")[:-1]
    assert [re.search(r'"method":"([^"]+)"', e).group(1) for e in events] == [
        "notifications/prompts/list_changed", "notifications/resources/list_changed",
        "notifications/resources/updated"]
    assert all(re.match(r"id: \d+\nevent: message\ndata: ", e) for e in events), events
    assert '"uri":"test://static-text"' in events[2]


async def test_listen_streams_carry_no_event_ids(registry_data):
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}}, rid=4)
    first = await first_body(McpHttpApp(), "POST", headers, body)
    assert b"notifications/subscriptions/acknowledged" in first and b"id:" not in first
