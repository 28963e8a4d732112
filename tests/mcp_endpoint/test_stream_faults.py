"""Faults around the HTTP transport: database errors, failing stream re-checks, cancellation
of listen streams and the anonymous stream budget."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.testing import ApplicationCommunicator
from django.db import OperationalError

from mcp_endpoint.dispatch.streams import Stream
from mcp_endpoint.transport.consumers import McpHttpApp
from mcp_endpoint.transport.stream_loop import run_stream_loop

from .conftest import asgi_scope, call_asgi, legacy_headers, modern_request, rpc


def scope_from(peer: str, method: str, headers: dict[str, str]) -> dict:
    return dict(asgi_scope(method, headers), client=(peer, 40000))


async def open_listen(app, peer: str, rid):
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}}, rid=rid)
    comm = ApplicationCommunicator(app, scope_from(peer, "POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await comm.receive_output(2)
    return comm, start


async def post_from(app, peer: str, headers, body):
    comm = ApplicationCommunicator(app, scope_from(peer, "POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await comm.receive_output(2)
    rest = await comm.receive_output(2)
    await comm.wait(2)
    return start["status"], rest.get("body", b"")


@pytest.fixture
def anonymous(settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 30}
    return settings


async def test_a_database_error_in_a_legacy_session_lookup_is_a_json_rpc_503(registry_data, anonymous, monkeypatch):
    from mcp_endpoint.wire import sessions

    async def down(*args, **kwargs):
        raise OperationalError("connection refused")

    monkeypatch.setattr(sessions, "_db_load", down)
    response = await call_asgi(McpHttpApp(), "POST", legacy_headers("ab" * 16), rpc("ping", rid=7))
    assert response.status == 503 and response.headers["content-type"] == "application/json"
    reply = response.json()
    assert reply["id"] == 7 and reply["error"]["code"] == -32603 and "database" in reply["error"]["message"]


@pytest.mark.parametrize("error, status", [(OperationalError("server closed the connection unexpectedly"), 503),
                                           (RuntimeError("a bug"), 500)])
async def test_an_error_escaping_the_dispatcher_is_a_json_error_and_never_reaches_the_server(
        registry_data, anonymous, monkeypatch, error, status):
    from mcp_endpoint.dispatch.dispatcher import dispatcher

    async def broken(*args, **kwargs):
        raise error

    monkeypatch.setattr(dispatcher, "post", broken)
    headers, body = modern_request("prompts/list")
    for _ in range(2):  # and the app keeps answering
        response = await call_asgi(McpHttpApp(), "POST", headers, body)  # wait() would re-raise an escape
        assert response.status == status and response.headers["content-type"] == "application/json"
        assert response.json()["error"]["code"] == -32603


async def test_an_error_after_a_stream_started_ends_its_body_instead_of_escaping(registry_data, anonymous,
                                                                                 monkeypatch):
    from mcp_endpoint.transport import consumers

    async def broken_loop(stream, receive, send):
        raise OperationalError("connection refused")

    monkeypatch.setattr(consumers, "run_stream_loop", broken_loop)
    comm, start = await open_listen(McpHttpApp(), "127.0.0.1", 3)
    assert start["status"] == 200
    await comm.receive_output(2)  # the acknowledgement
    end = await comm.receive_output(2)
    assert end == {"type": "http.response.body", "body": b"", "more_body": False}
    await comm.wait(2)


async def test_a_stream_whose_re_check_cannot_be_answered_stays_open_and_retries(settings):
    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 0.02}
    answers = [OperationalError("down"), OperationalError("down"), True, False]

    async def alive():
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    stream = Stream(first=[], groups=[], render=lambda event: None, closing=b'{"result":{}}', alive=alive)
    sent: list[dict] = []
    never = asyncio.Event()

    async def receive():
        await never.wait()

    async def send(message):
        sent.append(message)

    await asyncio.wait_for(run_stream_loop(stream, receive, send), 2)
    bodies = [m["body"] for m in sent]
    assert bodies[:3] == [b": keep-alive\n\n"] * 3  # two failed checks and one good one: kept open
    assert answers == []  # two failed checks, one good one, then the revoked client's end
    assert sent[-1] == {"type": "http.response.body", "body": b"", "more_body": False}  # no result: it reconnects


async def test_notifications_cancelled_ends_the_callers_own_listen_stream_without_a_result(registry_data, anonymous):
    app = McpHttpApp()
    mine, _ = await open_listen(app, "10.0.0.1", "listen-1")
    other, _ = await open_listen(app, "10.0.0.2", "listen-1")  # another client, the same request id
    for comm in (mine, other):
        ack = await comm.receive_output(2)
        assert b"notifications/subscriptions/acknowledged" in ack["body"]
    headers, _body = modern_request("notifications/cancelled")
    cancel = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled",
                         "params": {"requestId": "listen-1", "reason": "done"}}).encode()
    status, _ = await post_from(app, "10.0.0.1", headers, cancel)
    assert status == 202
    end = await mine.receive_output(2)
    assert end["body"] == b"" and end["more_body"] is False  # no result after a cancellation
    await mine.wait(2)
    assert await other.receive_nothing(0.3)  # the other client's stream with the same id lives on
    await other.send_input({"type": "http.disconnect"})
    await other.wait(2)


async def test_anonymous_stream_budget_is_per_peer_address(registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "KEEPALIVE_SECONDS": 30, "MAX_STREAMS_PER_CLIENT": 1}
    app = McpHttpApp()
    first, start = await open_listen(app, "10.0.0.1", 1)
    assert start["status"] == 200
    second, start = await open_listen(app, "10.0.0.1", 2)
    assert start["status"] == 429  # the same peer is over its budget
    await second.receive_output(2)
    await second.wait(2)
    elsewhere, start = await open_listen(app, "10.0.0.2", 1)
    assert start["status"] == 200  # another anonymous peer is not
    for comm in (first, elsewhere):
        await comm.send_input({"type": "http.disconnect"})
        await comm.wait(2)
