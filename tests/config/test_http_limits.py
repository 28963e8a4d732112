"""Request limits in the ASGI layers (any server but daphne, whose Twisted channel enforces them
itself: tests/mcp_endpoint/test_daphne_server.py): 431 for an oversized head, 413 for a body over
its path's limit, each with a JSON-RPC error body."""

from __future__ import annotations

import json
import time

from channels.testing import ApplicationCommunicator

from config import http_limits
from config.http_limits import FORM_BODY_BYTES, RequestLimits, body_limit
from registry import conf as registry_conf


async def inner_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"inner"})


def scope_with(headers):
    return {"type": "http", "method": "POST", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
            "headers": headers}


async def run(app, scope, chunks=(b"",)):
    comm = ApplicationCommunicator(app, scope)
    for index, chunk in enumerate(chunks):
        await comm.send_input({"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1})
    start = await comm.receive_output(2)
    body = await comm.receive_output(2)
    await comm.wait(2)
    return start, body


async def test_an_oversized_head_is_answered_431_without_reaching_the_application():
    start, body = await run(RequestLimits(inner_app, head_limit=1000),
                            scope_with([(b"mcp-name", b"x" * 1000)]), chunks=(b"a" * 10, b"b" * 10))
    assert start["status"] == 431 and (b"content-type", b"application/json") in start["headers"]
    assert "at most 1,000 bytes" in json.loads(body["body"])["error"]["message"]


async def test_a_head_within_the_limit_reaches_the_application():
    start, body = await run(RequestLimits(inner_app, head_limit=1000), scope_with([(b"mcp-name", b"x" * 500)]))
    assert start["status"] == 200 and body["body"] == b"inner"


class BodyReader:
    """An application that reads the whole body, as Django and the MCP consumer do."""

    def __init__(self) -> None:
        self.started = False
        self.read = 0
        self.saw_disconnect = False

    async def __call__(self, scope, receive, send):
        self.started = True
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.saw_disconnect = True
                return
            self.read += len(message.get("body", b""))
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"read %d" % self.read})


def body_scope(path, headers=()):
    return {"type": "http", "method": "POST", "path": path, "raw_path": path.encode(), "query_string": b"",
            "headers": list(headers)}


async def test_a_declared_length_over_the_paths_limit_is_refused_413_before_the_application_starts():
    app = BodyReader()
    start, body = await run(RequestLimits(app), body_scope("/admin/login/", [(b"content-length", b"300000000")]),
                            chunks=(b"u=x&p=y",))
    assert start["status"] == 413 and (b"connection", b"close") in start["headers"]
    assert f"at most {FORM_BODY_BYTES:,} bytes" in json.loads(body["body"])["error"]["message"]
    assert not app.started


async def test_a_chunked_body_is_refused_413_once_it_passes_the_limit_and_the_application_sees_a_disconnect():
    app = BodyReader()
    chunk = b"x" * 32 * 1024
    start, body = await run(RequestLimits(app, body_limit=lambda path: 100 * 1024), body_scope("/mcp"),
                            chunks=(chunk,) * 5)
    assert start["status"] == 413 and "at most 102,400 bytes" in json.loads(body["body"])["error"]["message"]
    assert app.saw_disconnect and app.read <= 100 * 1024


async def test_a_refusal_is_answered_before_the_rest_of_the_body_is_read_and_ends_when_the_body_ends():
    """The answer goes out first; what the client still sends is then read, so the server's close
    on "Connection: close" does not reset a client still sending (and lose it the answer)."""
    app = BodyReader()
    scope = body_scope("/mcp", [(b"content-length", b"300000000")])
    comm = ApplicationCommunicator(RequestLimits(app), scope)
    start = await comm.receive_output(2)  # no input yet: nothing of the body was needed for it
    assert start["status"] == 413 and (b"connection", b"close") in start["headers"]
    answer = await comm.receive_output(2)
    assert "at most 1,048,576 bytes" in json.loads(answer["body"])["error"]["message"]
    assert answer["more_body"]  # whole on the client's side (Content-Length), open on the server's
    await comm.send_input({"type": "http.request", "body": b"x" * 65536, "more_body": True})
    assert await comm.receive_nothing(0.1)  # still reading what the client sends
    await comm.send_input({"type": "http.request", "body": b"x" * 65536, "more_body": False})
    end = await comm.receive_output(2)
    assert end == {"type": "http.response.body", "body": b""}  # the answer ends: the server closes
    await comm.wait(2)
    assert not app.started


async def test_a_refusal_ends_when_the_client_leaves_or_after_the_linger_time(monkeypatch):
    app, scope = RequestLimits(inner_app, head_limit=1000), scope_with([(b"mcp-name", b"x" * 1000)])
    comm = ApplicationCommunicator(app, scope)
    assert (await comm.receive_output(2))["status"] == 431
    assert (await comm.receive_output(2))["more_body"]
    await comm.send_input({"type": "http.disconnect"})
    assert await comm.receive_output(2) == {"type": "http.response.body", "body": b""}
    await comm.wait(2)

    monkeypatch.setattr(http_limits, "LINGER_SECONDS", 0.3)
    comm = ApplicationCommunicator(app, scope)
    started = time.monotonic()
    await comm.receive_output(2)
    await comm.receive_output(2)
    await comm.send_input({"type": "http.request", "body": b"x", "more_body": True})  # and then nothing
    assert await comm.receive_output(2) == {"type": "http.response.body", "body": b""}
    assert 0.25 < time.monotonic() - started < 2
    await comm.wait(2)


async def test_a_body_within_the_limit_reaches_the_application():
    app = BodyReader()
    start, body = await run(RequestLimits(app, body_limit=lambda path: 1000), body_scope("/mcp"), chunks=(b"a" * 500,))
    assert start["status"] == 200 and body["body"] == b"read 500"


def test_the_import_api_limit_is_read_through_the_registry_settings_and_their_default(settings):
    """It used to index settings.REGISTRY itself: a project setting no MAX_IMPORT_BYTES got a
    KeyError (a 500) instead of the registry's 20 MiB default."""
    settings.REGISTRY = {}
    assert body_limit("/api/v1/import/") == 2 * registry_conf.DEFAULTS["MAX_IMPORT_BYTES"]
    settings.REGISTRY = {"MAX_IMPORT_BYTES": 1000}
    assert body_limit("/api/v1/import/") == 2000


def test_each_path_has_its_own_body_limit(settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_IMPORT_BYTES": 20 * 1024 * 1024}
    settings.MAX_REQUEST_BODY_BYTES = 32 * 1024 * 1024
    assert body_limit("/mcp") == 1024 * 1024
    assert body_limit(b"/mcp?x=1") == 1024 * 1024
    for path in ("/admin/login/", "/oauth/token/", "/register", "/oauth/revoke_token/"):
        assert body_limit(path) == FORM_BODY_BYTES
    assert body_limit("/api/v1/import/") == 40 * 1024 * 1024
    assert body_limit("/admin/registry/resourcedocument/1/change/") == 32 * 1024 * 1024


def test_every_body_limit_follows_a_changed_setting_after_it_was_read(settings):
    """The limits are read from the settings once, not per request; a changed setting must still
    take effect at once, never leaving an old (larger) limit in force."""
    assert body_limit(b"/mcp") == body_limit("/mcp") == 1024 * 1024
    assert body_limit("/admin/") == 32 * 1024 * 1024
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "MAX_BODY_BYTES": 1000}
    settings.MAX_REQUEST_BODY_BYTES = 2000
    settings.REGISTRY = {**settings.REGISTRY, "MAX_IMPORT_BYTES": 1500}
    assert body_limit(b"/mcp") == body_limit("/mcp?x=1") == 1000
    assert body_limit("/admin/") == 2000
    assert body_limit(b"/api/v1/import/") == 3000


async def test_the_head_counts_path_query_and_each_header_with_four_bytes_to_the_byte():
    """path (4) + query (3) + headers: (8 + 6 + 4) + (14 + 3 + 4) = 46 bytes."""
    headers = [(b"mcp-name", b"x" * 6), (b"content-length", b"100")]
    scope = {**scope_with(headers), "query_string": b"a=1"}
    start, _ = await run(RequestLimits(inner_app, head_limit=46), scope, chunks=(b"a" * 100,))
    assert start["status"] == 200
    start, _ = await run(RequestLimits(inner_app, head_limit=45), scope, chunks=(b"a" * 100,))
    assert start["status"] == 431
