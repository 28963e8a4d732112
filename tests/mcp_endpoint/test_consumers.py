"""The /mcp transport at ASGI level: statuses, headers, JSON vs SSE bodies, the GET stream."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.layers import get_channel_layer
from channels.testing import ApplicationCommunicator, HttpCommunicator

from mcp_endpoint.notify.listeners import session_group
from mcp_endpoint.transport.consumers import McpHttpApp
from tests.mcp_endpoint.conftest import asgi_scope, call_asgi, legacy_headers, modern_request, rpc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("anonymous_allowed")]

INIT = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}})


async def open_session(app):
    response = await call_asgi(app, "POST", legacy_headers(version=None), INIT)
    assert response.status == 200
    return response.headers["mcp-session-id"]


async def test_initialize_over_http_sets_the_session_header_and_answers_json(mcp_app, registry_data):
    response = await call_asgi(mcp_app, "POST", legacy_headers(version=None), INIT)
    assert response.status == 200 and response.headers["content-type"] == "application/json"
    assert response.json()["result"]["protocolVersion"] == "2025-11-25"
    assert len(response.headers["mcp-session-id"]) >= 32


async def test_http_communicator_drives_a_modern_request(mcp_app, registry_data):
    headers, body = modern_request("prompts/list")
    comm = HttpCommunicator(mcp_app, "POST", "/mcp", body=body,
                            headers=[(k.encode(), v.encode()) for k, v in headers.items()])
    response = await comm.get_response()
    assert response["status"] == 200
    assert json.loads(response["body"])["result"]["resultType"] == "complete"


async def test_sse_only_accept_gets_one_sse_event(mcp_app, registry_data):
    headers, body = modern_request("prompts/list")
    headers["accept"] = "text/event-stream"
    response = await call_asgi(mcp_app, "POST", headers, body)
    assert response.status == 200 and response.headers["content-type"] == "text/event-stream"
    assert response.headers["x-accel-buffering"] == "no"
    (message,) = response.sse_messages()
    assert message["id"] == 1 and "prompts" in message["result"]


async def test_foreign_host_or_origin_is_403_with_a_json_rpc_body(mcp_app, registry_data):
    headers, body = modern_request("server/discover")
    for override in ({"host": "evil.example.com"}, {"origin": "http://evil.example.com"}, {"origin": "null"}):
        response = await call_asgi(mcp_app, "POST", dict(headers, **override), body)
        assert response.status == 403 and "error" in response.json()


async def test_localhost_with_any_port_is_allowed(mcp_app, registry_data):
    headers, body = modern_request("server/discover")
    for host in ("localhost:9999", "127.0.0.1:1", "[::1]:8080"):
        response = await call_asgi(mcp_app, "POST", dict(headers, host=host, origin=f"http://{host}"), body)
        assert response.status == 200, host


async def test_wrong_accept_is_406_and_wrong_content_type_is_415(mcp_app, registry_data):
    headers, body = modern_request("server/discover")
    response = await call_asgi(mcp_app, "POST", dict(headers, accept="text/html"), body)
    assert response.status == 406 and response.json()["error"]["code"] == -32600
    response = await call_asgi(mcp_app, "POST", dict(headers, **{"content-type": "text/plain"}), body)
    assert response.status == 415 and "error" in response.json()


async def test_oversized_body_is_413(mcp_app, registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "MAX_BODY_BYTES": 100}
    headers, body = modern_request("prompts/get", {"name": "x" * 200})
    response = await call_asgi(mcp_app, "POST", headers, body)
    assert response.status == 413 and "error" in response.json()
    response = await call_asgi(mcp_app, "POST", dict(headers, **{"content-length": "5000"}), body)
    assert response.status == 413


async def test_missing_token_is_401_with_bearer_challenge_when_anonymous_is_off(mcp_app, registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False}
    headers, body = modern_request("server/discover")
    response = await call_asgi(mcp_app, "POST", headers, body)
    assert response.status == 401 and response.headers["www-authenticate"].startswith("Bearer")
    assert "error" in response.json()


async def test_modern_get_and_delete_are_405(mcp_app, registry_data):
    headers, _ = modern_request("prompts/list")
    for method in ("GET", "DELETE"):
        response = await call_asgi(mcp_app, method, headers)
        assert response.status == 405 and response.headers["allow"] == "POST"
    response = await call_asgi(mcp_app, "PUT", headers)
    assert response.status == 405


async def test_notification_post_is_202_empty(mcp_app, registry_data):
    sid = await open_session(mcp_app)
    response = await call_asgi(mcp_app, "POST", legacy_headers(sid), rpc("notifications/initialized", rid=None))
    assert response.status == 202 and response.body == b""


async def test_delete_ends_the_session_and_the_dead_id_gets_404(mcp_app, registry_data):
    sid = await open_session(mcp_app)
    assert (await call_asgi(mcp_app, "DELETE", legacy_headers(sid))).status == 200
    response = await call_asgi(mcp_app, "POST", legacy_headers(sid), rpc("tools/list"))
    assert response.status == 404 and "error" in response.json()


async def test_get_stream_stays_open_with_keepalives_and_ends_on_client_disconnect(registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 0.05}
    app = McpHttpApp()
    sid = await open_session(app)
    comm = ApplicationCommunicator(app, asgi_scope("GET", dict(legacy_headers(sid), accept="text/event-stream")))
    await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
    start = await comm.receive_output(2)
    assert start["status"] == 200
    assert (b"mcp-session-id", sid.encode()) in start["headers"]
    await comm.receive_output(2)  # opening comment
    keepalive = await comm.receive_output(2)
    assert keepalive["body"].startswith(b":") and keepalive["more_body"] is True
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)  # the loop notices the disconnect and the app returns


async def test_get_stream_delivers_channel_layer_notifications_for_subscribed_uris(registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 30}
    app = McpHttpApp()
    sid = await open_session(app)
    response = await call_asgi(app, "POST", legacy_headers(sid), rpc("resources/subscribe", {"uri": "test://watched-resource"}))
    assert response.json()["result"] == {}
    comm = ApplicationCommunicator(app, asgi_scope("GET", dict(legacy_headers(sid), accept="text/event-stream")))
    await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
    await comm.receive_output(2)
    await comm.receive_output(2)
    await asyncio.sleep(0.05)  # let the stream join its group
    layer = get_channel_layer()
    await layer.group_send(session_group(sid), {"type": "mcp.notify", "method": "notifications/resources/updated",
                                                "params": {"uri": "test://other"}})
    await layer.group_send(session_group(sid), {"type": "mcp.notify", "method": "notifications/resources/updated",
                                                "params": {"uri": "test://watched-resource"}})
    frame = await comm.receive_output(2)
    assert b'"uri":"test://watched-resource"' in frame["body"]
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)


async def test_get_without_session_is_405_and_with_unknown_session_404(mcp_app, registry_data):
    headers = dict(legacy_headers(None, None), accept="text/event-stream")
    assert (await call_asgi(mcp_app, "GET", headers)).status == 405
    response = await call_asgi(mcp_app, "GET", dict(headers, **{"mcp-session-id": "ab" * 16}))
    assert response.status == 404


async def test_listen_stream_acknowledges_then_ends_without_a_result_on_server_restart(registry_data, settings):
    from mcp_endpoint.notify.hub import hub

    app = McpHttpApp()
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}},
                                   rid=5)
    comm = ApplicationCommunicator(app, asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await comm.receive_output(2)
    assert start["status"] == 200 and (b"content-type", b"text/event-stream") in start["headers"]
    ack = await comm.receive_output(2)
    assert b"notifications/subscriptions/acknowledged" in ack["body"]
    await asyncio.sleep(0.05)
    hub.close_all()
    closing = await comm.receive_output(2)
    # A restart is not the end of the subscription: no result, so the client listens again.
    assert closing["body"] == b"" and closing["more_body"] is False
    await comm.wait(2)


async def test_delete_closes_the_sessions_open_get_stream(registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 30}
    app = McpHttpApp()
    sid = await open_session(app)
    comm = ApplicationCommunicator(app, asgi_scope("GET", dict(legacy_headers(sid), accept="text/event-stream")))
    await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
    await comm.receive_output(2)
    await comm.receive_output(2)
    await asyncio.sleep(0.05)
    assert (await call_asgi(app, "DELETE", legacy_headers(sid))).status == 200
    end = await comm.receive_output(2)
    assert end["more_body"] is False
    await comm.wait(2)


async def test_stream_ends_at_a_keepalive_tick_once_the_session_is_gone(registry_data, settings):
    from mcp_endpoint.models import McpSession

    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 0.05, "SESSION_CACHE_SECONDS": 0}
    app = McpHttpApp()
    sid = await open_session(app)
    comm = ApplicationCommunicator(app, asgi_scope("GET", dict(legacy_headers(sid), accept="text/event-stream")))
    await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
    await comm.receive_output(2)
    await comm.receive_output(2)
    await McpSession.objects.filter(pk=sid).aupdate(ended=True)  # ended by another process
    while (await comm.receive_output(2))["more_body"]:
        pass
    await comm.wait(2)


async def test_hot_path_makes_no_database_query_or_thread_hop(mcp_app, registry_data, settings, monkeypatch):
    """Warm catalog and content + cached session: list/get/read on both wires never leave the event loop."""
    from mcp_endpoint.handlers import catalogs, identity, reads
    from mcp_endpoint.handlers.catalogs import reset_caches
    from mcp_endpoint.wire import sessions
    from registry.serving import warmup

    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "SESSION_CACHE_SECONDS": 60}
    sid = await open_session(mcp_app)
    calls = [("prompts/list", {}), ("prompts/get", {"name": "test_simple_prompt"}),
             ("resources/read", {"uri": "test://static-text"}), ("resources/templates/list", {})]
    for method, params in calls:  # the first get/read of an entry loads its content (one read, off the loop)
        headers, body = modern_request(method, params)
        assert (await call_asgi(mcp_app, "POST", headers, body)).status == 200, method
    # The first list was read from the database while the catalog warms in the background: wait for it.
    await asyncio.wrap_future(warmup.warm("production"))

    def forbidden(*args, **kwargs):
        raise AssertionError("left the hot path")

    monkeypatch.setattr(reads.source, "load_catalog", forbidden)
    monkeypatch.setattr(reads.source, "warm_catalog", forbidden)
    monkeypatch.setattr(reads.source, "page_catalog", forbidden)
    monkeypatch.setattr(sessions, "_db_load", forbidden)
    for module in (catalogs, identity):  # every handler module that may leave the event loop
        monkeypatch.setattr(module, "database_sync_to_async", forbidden)
    reset_caches()  # served from the catalog and content cache, not from the result cache
    for method, params in calls:
        headers, body = modern_request(method, params)
        assert (await call_asgi(mcp_app, "POST", headers, body)).status == 200, method
        response = await call_asgi(mcp_app, "POST", legacy_headers(sid), rpc(method, params))
        assert response.status == 200 and "result" in response.json(), method


async def test_stream_loop_relays_queued_frames_and_ends_on_the_close_sentinel(settings):
    from mcp_endpoint.dispatch.streams import Stream
    from mcp_endpoint.transport.stream_loop import run_stream_loop

    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 30}
    frames: asyncio.Queue = asyncio.Queue()
    closed = []
    stream = Stream(first=[], groups=[], render=lambda event: None, closing=b'{"closing":true}',
                    frames=frames, on_close=lambda: closed.append(True))
    sent: list[dict] = []
    never = asyncio.Event()

    async def receive():
        await never.wait()

    async def send(message):
        sent.append(message)

    loop_task = asyncio.ensure_future(run_stream_loop(stream, receive, send))
    await frames.put(b'{"n":1}')
    await frames.put(None)
    await asyncio.wait_for(loop_task, 2)
    assert sent[0]["body"] == b'event: message\ndata: {"n":1}\n\n' and sent[0]["more_body"] is True
    assert b'"closing":true' in sent[-1]["body"] and sent[-1]["more_body"] is False
    assert closed == [True]


async def test_server_shutdown_ends_open_streams_without_their_closing_frame(registry_data, settings):
    from mcp_endpoint.transport.stream_loop import open_streams

    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 30}
    app = McpHttpApp()
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}}, rid=9)
    comm = ApplicationCommunicator(app, asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    await comm.receive_output(2)
    await comm.receive_output(2)  # acknowledgement
    await asyncio.sleep(0.05)
    open_streams.close_all()  # what the SIGTERM hook does
    closing = await comm.receive_output(2)
    assert closing["body"] == b"" and closing["more_body"] is False  # the client reconnects
    await comm.wait(2)


async def test_anonymous_sessions_are_counted_under_the_callers_address(mcp_app, registry_data, settings):
    from mcp_endpoint.models import McpSession

    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "MAX_SESSIONS_PER_CLIENT": 2}
    sids = [await open_session(mcp_app) for _ in range(3)]
    rows = {row.session_id: row async for row in McpSession.objects.all()}
    assert {row.peer for row in rows.values()} == {"127.0.0.1"}  # asgi_scope's client
    assert [rows[sid].ended for sid in sids] == [True, False, False]
    response = await call_asgi(mcp_app, "POST", legacy_headers(sids[0]), rpc("prompts/list"))
    assert response.status == 404  # the client initializes again, as the transport specifies


async def test_frames_queued_together_leave_in_one_write_and_the_loop_ends_on_drop(settings):
    """The hub's mailbox wakes the loop directly; what is queued by then goes out as one body."""
    from mcp_endpoint.dispatch.streams import Stream
    from mcp_endpoint.notify.listeners import DROP
    from mcp_endpoint.notify.mailbox import Mailbox
    from mcp_endpoint.transport.stream_loop import run_stream_loop

    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 30}
    frames = Mailbox(10)
    stream = Stream(first=[], groups=[], render=lambda event: None, closing=b'{"closing":true}', frames=frames)
    sent: list[dict] = []
    never = asyncio.Event()

    async def receive():
        await never.wait()

    async def send(message):
        sent.append(message)

    loop_task = asyncio.ensure_future(run_stream_loop(stream, receive, send))
    await asyncio.sleep(0.01)
    for n in (1, 2, 3):
        frames.put_nowait(b'{"n":%d}' % n)
    frames.put_nowait(DROP)
    await asyncio.wait_for(loop_task, 2)
    assert [m["body"] for m in sent] == [
        b'event: message\ndata: {"n":1}\n\nevent: message\ndata: {"n":2}\n\nevent: message\ndata: {"n":3}\n\n', b""]
    assert sent[-1]["more_body"] is False and frames.waker is None  # no final result: the client reconnects


async def test_cancelling_a_streaming_request_ends_its_stream_loop_and_releases_its_listener(registry_data, settings):
    """The stream loop runs as a task of its own; the server cancelling the request (daphne does
    on disconnect and at its application close timeout) must end that task too."""
    from mcp_endpoint.notify.hub import hub

    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 30}
    app = McpHttpApp()
    before = len(hub.listeners)
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}},
                                   rid=5)
    comm = ApplicationCommunicator(app, asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    await comm.receive_output(2)
    await comm.receive_output(2)  # acknowledgement: the loop task is running
    assert len(hub.listeners) == before + 1
    loops = [t for t in asyncio.all_tasks() if "run_stream_loop" in repr(t.get_coro())]
    assert loops
    comm.future.cancel()
    await asyncio.sleep(0.05)
    assert all(t.done() for t in loops)
    assert len(hub.listeners) == before
