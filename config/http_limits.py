"""Limits on a request's head and body, and how a refusal is answered.

A request line plus headers over MAX_REQUEST_HEAD_BYTES gets "431 Request Header Fields Too
Large"; a body over the limit of its path "413 Payload Too Large", refused on its
``Content-Length`` before any of it is read, or as soon as a chunked body passes the limit; a
request head that has not arrived within REQUEST_HEAD_TIMEOUT_SECONDS "408 Request Timeout".
Every refusal carries a JSON-RPC error body and ``Connection: close``, goes out before the rest of
the request is read, and is followed by LINGER_SECONDS at most of reading and dropping what the
client still sends, so that the close does not reset a client still sending.

Under daphne, Twisted's HTTP channel enforces them itself (mcp_endpoint/transport/daphne_server.py, from
the rules here): Twisted would otherwise spool a body of any size to a temporary file before the
application sees it, and drop an oversized head without a word. Under any other server
(uvicorn) the outermost ASGI layer :class:`RequestLimits` does it, before Django, which would
spool a large body again, reads anything. A request head that
does not arrive can only be timed by the server: uvicorn has no such timeout (README: what a
proxy in front must add).

Body limits by path (:func:`body_limit`): ``/mcp`` takes ``MCP_ENDPOINT["MAX_BODY_BYTES"]``
(1 MiB); the sign-in, OAuth and registration endpoints :data:`FORM_BODY_BYTES`; the import API
twice ``REGISTRY["MAX_IMPORT_BYTES"]`` (a YAML file inside a JSON string may double in size);
everything else (admin forms with uploads, the REST API) MAX_REQUEST_BODY_BYTES (32 MiB).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from itertools import chain
from typing import Any

from django.core.signals import setting_changed

DEFAULT_MAX_REQUEST_HEAD_BYTES = 16 * 1024
DEFAULT_MAX_REQUEST_BODY_BYTES = 32 * 1024 * 1024
DEFAULT_REQUEST_HEAD_TIMEOUT_SECONDS = 10.0
# Sign-in forms, the OAuth endpoints and client registration carry a few fields; RFC 7591
# metadata is capped lower still by oauth/views.py.
FORM_BODY_BYTES = 64 * 1024
_FORM_PATHS = ("/admin/login/", "/oauth/", "/register", "/.well-known/")
# After a refusal has gone out, how long what the client still sends of the request is read and
# discarded (in memory, never written anywhere) before the answer ends and the server closes.
LINGER_SECONDS = 5.0

_REASONS = {400: "Bad Request", 408: "Request Timeout", 413: "Payload Too Large",
            431: "Request Header Fields Too Large"}


def too_large_message(limit: int) -> str:
    return (f"Request Header Fields Too Large: the request line and headers may be at most {limit:,} bytes "
            "together")


def refusal_message(status: int, limit: float) -> str:
    if status == 431:
        return too_large_message(int(limit))
    if status == 413:
        return f"Payload Too Large: the body may be at most {int(limit):,} bytes here"
    if status == 408:
        return f"Request Timeout: the request line and headers must arrive within {limit:g} seconds"
    return "Bad Request: malformed request line or headers"


def refusal_body(status: int, limit: float) -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": None,
                       "error": {"code": -32600, "message": refusal_message(status, limit)}}).encode()


def refusal_response(status: int, limit: float) -> bytes:
    """The whole HTTP/1.1 response refusing a request (what Twisted's channel writes)."""
    body = refusal_body(status, limit)
    head = (f"HTTP/1.1 {status} {_REASONS.get(status, 'Bad Request')}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("ascii")
    return head + body


def body_limit(path: str | bytes) -> int:
    """The largest request body accepted for ``path`` (a query string is ignored)."""
    if path == b"/mcp" or path == "/mcp":  # nearly every request: no decoding, no splitting
        return _limits()["mcp"]
    if isinstance(path, bytes):
        path = path.decode("latin-1")
    path = path.split("?", 1)[0]
    if path == "/mcp":
        return _limits()["mcp"]
    if path.startswith(_FORM_PATHS):
        return FORM_BODY_BYTES
    if path.startswith("/api/v1/import/"):
        return _limits()["import"]
    return _limits()["other"]


_LIMITS: dict[str, int] = {}


def _limits() -> dict[str, int]:
    """The settings-derived body limits, read once rather than on every request (three settings
    lookups a request were a measurable share of a read); dropped whenever a setting changes
    (tests' overrides), so they always follow the settings."""
    if not _LIMITS:
        from django.conf import settings

        from mcp_endpoint.settings import mcp_settings
        from registry.conf import max_document_bytes

        _LIMITS.update({
            "mcp": int(mcp_settings.MAX_BODY_BYTES),
            "import": 2 * max_document_bytes(),
            "other": int(getattr(settings, "MAX_REQUEST_BODY_BYTES", DEFAULT_MAX_REQUEST_BODY_BYTES)),
        })
    return _LIMITS


def _forget_limits(**_: Any) -> None:
    _LIMITS.clear()


setting_changed.connect(_forget_limits, dispatch_uid="config.http_limits.forget_limits")


async def _refuse(receive: Any, send: Any, status: int, limit: float, more_body: bool = True) -> None:
    """Answer ``status`` at once, then read and discard what the client still sends of the
    request (``more_body``: some may still come) for up to LINGER_SECONDS before ending the
    answer, on which the server closes ("Connection: close").

    Closing a socket with unread input resets the connection, and a client still sending would
    lose the answer with it (RFC 9112, section 9.6); reading on first, as daphne's channel does
    (mcp_endpoint/transport/daphne_server.py), avoids that. The answer is whole on the client's side from
    the start (its Content-Length): a client that reads while it sends stops and goes, one that
    sends everything first finds it once it reads, and one waiting for "100 Continue" gets the
    final status instead."""
    body = refusal_body(status, limit)
    await send({"type": "http.response.start", "status": status, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body, "more_body": True})
    if more_body:
        await _discard_body(receive)
    await send({"type": "http.response.body", "body": b""})


class RequestLimits:
    """ASGI middleware, the outermost layer: a request whose path, query and headers together
    exceed ``head_limit`` bytes gets 431, one whose body passes :func:`body_limit` of its path
    413, each with a JSON-RPC error body, before any application code sees it. A declared
    ``Content-Length`` over the limit is refused at once; a chunked body is counted as the
    application reads it, and once it passes the limit the client is answered 413 and the
    application sees the client gone (``http.disconnect``).

    One layer for both (and nothing wrapped for a body of declared length, which the server
    delivers to the byte): every open stream keeps its layers' frames alive, and two layers with
    their closures cost 1.8 KiB per idle listener (bench/notify.py, 10,000 listeners)."""

    def __init__(self, app: Any, head_limit: int = DEFAULT_MAX_REQUEST_HEAD_BYTES,
                 body_limit: Any = body_limit) -> None:
        self.app = app
        self.head_limit = head_limit
        self.body_limit = body_limit

    def __getattr__(self, name: str) -> Any:
        # The wrapped application's own attributes (the router's mcp_app, ...) stay reachable.
        if name == "app":
            raise AttributeError(name)
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = scope.get("headers") or ()
        size = len(scope.get("raw_path") or scope.get("path", "").encode()) + len(scope.get("query_string", b""))
        # Each header counts its name, its value and 4 bytes (": " and CRLF); summed in C.
        size += sum(map(len, chain.from_iterable(headers))) + 4 * len(headers)
        if size > self.head_limit:
            await _refuse(receive, send, 431, self.head_limit)
            return
        limit = self.body_limit(scope.get("raw_path") or scope.get("path", ""))
        declared = _content_length(headers)
        if declared is not None:
            if declared > limit:
                await _refuse(receive, send, 413, limit)
                return
            await self.app(scope, receive, send)
            return
        await _counted(self.app, scope, receive, send, limit)


async def _discard_body(receive: Any) -> None:
    """Read and drop the rest of the body until it ends, the client leaves, or LINGER_SECONDS pass
    (bounded in time, as daphne's channel is, not in bytes: a bound in bytes would close on a client
    still sending, the reset this is here to avoid)."""

    async def drain() -> None:
        while True:
            message = await receive()
            if message.get("type") != "http.request" or not message.get("more_body"):
                return

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(drain(), LINGER_SECONDS)


async def _counted(app: Any, scope: dict[str, Any], receive: Any, send: Any, limit: int) -> None:
    """Run ``app`` on a body of no declared length, refusing it with 413 once it passes ``limit``."""
    state = {"read": 0, "refused": False, "started": False}

    async def counted_receive() -> dict[str, Any]:
        if state["refused"]:
            return {"type": "http.disconnect"}
        message = await receive()
        if message.get("type") == "http.request":
            state["read"] += len(message.get("body", b""))
            if state["read"] > limit:
                state["refused"] = True
                if not state["started"]:
                    state["started"] = True
                    await _refuse(receive, send, 413, limit, more_body=bool(message.get("more_body")))
                return {"type": "http.disconnect"}
        return message

    async def guarded_send(message: dict[str, Any]) -> None:
        if state["refused"]:
            return  # the 413 is the answer
        if message.get("type") == "http.response.start":
            state["started"] = True
        await send(message)

    await app(scope, counted_receive, guarded_send)


def _content_length(headers: Any) -> int | None:
    for name, value in headers:
        if name.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
