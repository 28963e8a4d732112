"""The /mcp HTTP transport as a raw ASGI application.

Thin by design: HTTP verbs, Host/Origin, Accept/Content-Type, body size, bearer auth, JSON vs
SSE framing, and the opening of a long-lived stream (its loop: stream_loop.py). Everything
protocol-related is the dispatcher's.

Why not ``AsyncHttpConsumer``: it handles one ASGI message at a time and stops when
``handle()`` returns (so a stream cannot watch for disconnects and channel-layer events at
once), and Channels' per-message database-connection cleanup costs a thread hop per request,
halving throughput. This class keeps the consumer's role and is still driven by
``channels.testing.HttpCommunicator`` in tests.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http.request import split_domain_port, validate_host

from oauth.resource import challenge, resource_url

from ..dispatch.dispatcher import Dispatcher
from ..dispatch.dispatcher import dispatcher as default_dispatcher
from ..dispatch.replies import Reply, error_reply
from ..dispatch.streams import Stream
from ..settings import mcp_settings, on_reload
from ..wire import errors, jsonrpc, sse
from ..wire.versions import headers_from_asgi
from .stream_loop import as_event, release, run_stream_loop

logger = logging.getLogger(__name__)

_JSON_HEADERS = [(b"content-type", b"application/json")]
_SSE_HEADERS = [
    (b"content-type", b"text/event-stream"),
    (b"cache-control", b"no-cache, no-transform"),
    (b"x-accel-buffering", b"no"),
]
_LOCAL_NAMES = {"localhost", "127.0.0.1", "[::1]", "::1"}
_host_verdicts: dict[str, bool] = {}
on_reload(_host_verdicts.clear)


def _host_ok(host: str) -> bool:
    """Host (or Origin's host) against ALLOWED_HOSTS, any port; cached per value."""
    verdict = _host_verdicts.get(host)
    if verdict is None:
        domain, _port = split_domain_port(host.lower())
        if not domain and host.lower().startswith("[::1]"):
            domain = "[::1]"
        allowed = list(settings.ALLOWED_HOSTS)
        if settings.DEBUG and not allowed:
            allowed = [".localhost", "127.0.0.1", "[::1]"]
        verdict = bool(domain) and validate_host(domain, allowed)
        if len(_host_verdicts) > 1024:
            _host_verdicts.clear()
        _host_verdicts[host] = verdict
    return verdict


def _origin_ok(origin: str) -> bool:
    try:
        parts = urlsplit(origin)
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc) and _host_ok(parts.netloc)


def _accepts(accept: str | None) -> tuple[bool, bool]:
    """(JSON acceptable, SSE acceptable). A missing Accept header accepts anything."""
    if accept is None:
        return True, True
    a = accept.lower()
    wildcard = "*/*" in a
    return (wildcard or "application/json" in a or "application/*" in a,
            wildcard or "text/event-stream" in a or "text/*" in a)


class _ResponseSend:
    """A request's ASGI send that remembers whether the response has started, so a failure
    after that ends the body instead of starting a second response."""

    __slots__ = ("send", "started")

    def __init__(self, send: Any) -> None:
        self.send = send
        self.started = False

    async def __call__(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.started = True
        await self.send(message)


class McpHttpApp:
    """ASGI app for the MCP endpoint path (POST, GET stream, DELETE)."""

    def __init__(self, dispatcher: Dispatcher | None = None) -> None:
        self.dispatcher = dispatcher or default_dispatcher

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            raise ValueError(f"McpHttpApp cannot handle {scope['type']!r} connections")
        tracked_send = _ResponseSend(send)
        try:
            await self._handle(scope, receive, tracked_send)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # the server must answer, and must keep answering
            # Nothing may escape to the server: daphne answers an application exception with an
            # HTML 500 and, once a response has started, its application checker can stop
            # answering anything. Before the response: a JSON-RPC error (503 when the database
            # is unreachable); after it started (a stream): end the body so the client reconnects.
            logger.error("MCP request failed: %r", exc, exc_info=exc)
            try:
                if not tracked_send.started:
                    reply = error_reply(exc, modern=True)
                    reply.status = max(reply.status, 500)  # a failure, whatever its JSON-RPC code
                    await self._reply(send, reply)
                else:
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
            except Exception:  # the client is gone too
                logger.debug("could not send the error reply", exc_info=True)

    async def _handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        headers, duplicated = headers_from_asgi(scope.get("headers") or [])
        method = scope["method"]
        if method not in ("POST", "GET", "DELETE"):
            await self._reply(send, self._refusal(errors.MethodNotAllowed(), allow="GET, POST, DELETE"))
            return
        host = headers.get("host", "")
        origin = headers.get("origin")
        if not _host_ok(host) or (origin is not None and not _origin_ok(origin)):
            await self._reply(send, self._refusal(errors.Forbidden("Forbidden: Host or Origin not allowed")))
            return
        scheme = scope.get("scheme") or "http"
        authorization = headers.get("authorization")
        try:
            # The resource URL only matters for a token (its audience): not built for anonymous calls.
            identity = await self.dispatcher.authenticate(
                authorization, scope.get("client"), resource=resource_url(scheme, host) if authorization else None)
        except errors.McpError as exc:
            reply = self._refusal(exc)
            if isinstance(exc, (errors.Unauthorized, errors.InsufficientScope)):
                # RFC 9728 §5.1: point the client at the metadata that leads to our authorization server.
                reply.authenticate = False
                value = challenge(scheme, host, getattr(exc, "bearer_error", None))
                reply.extra.append((b"www-authenticate", value.encode("ascii")))
            await self._reply(send, reply)
            return
        if method == "POST":
            await self._post(scope, receive, send, headers, duplicated, identity)
        elif method == "GET":
            if not _accepts(headers.get("accept"))[1]:
                await self._reply(send, self._refusal(errors.NotAcceptable(
                    "Not Acceptable: Accept must allow text/event-stream")))
                return
            reply = await self.dispatcher.open_stream(headers, identity)
            await self._reply(send, reply, receive=receive)
        else:
            await self._reply(send, await self.dispatcher.end_session(headers, identity))

    async def _post(self, scope: dict[str, Any], receive: Any, send: Any, headers: dict[str, str],
                    duplicated: str | None, identity: Any) -> None:
        want_json, want_sse = _accepts(headers.get("accept"))
        if not (want_json or want_sse):
            await self._reply(send, self._refusal(errors.NotAcceptable()))
            return
        ctype = headers.get("content-type", "").split(";", 1)[0].strip().lower()
        if ctype != "application/json":
            await self._reply(send, self._refusal(errors.UnsupportedMediaType()))
            return
        body = await self._read_body(receive, headers)
        if body is None:  # client went away
            return
        if isinstance(body, errors.McpError):
            await self._reply(send, self._refusal(body))
            return
        reply = await self.dispatcher.post(headers, body, identity, duplicated_header=duplicated)
        if reply.stream is not None and not want_sse:
            release(reply.stream)  # its listener was registered; no stream will run to let it go
            reply = self._refusal(errors.NotAcceptable(
                "Not Acceptable: subscriptions/listen answers with text/event-stream"))
        await self._reply(send, reply, receive=receive, sse_body=not want_json)

    @staticmethod
    async def _read_body(receive: Any, headers: dict[str, str]) -> bytes | errors.McpError | None:
        limit = mcp_settings.MAX_BODY_BYTES
        declared = headers.get("content-length")
        if declared is not None:
            try:
                if int(declared) > limit:
                    return errors.PayloadTooLarge(f"Payload Too Large: body exceeds {limit} bytes")
            except ValueError:
                return errors.InvalidRequest("Bad Request: invalid Content-Length")
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            chunk = message.get("body", b"")
            if chunk:
                size += len(chunk)
                if size > limit:
                    return errors.PayloadTooLarge(f"Payload Too Large: body exceeds {limit} bytes")
                chunks.append(chunk)
            if not message.get("more_body", False):
                break
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    @staticmethod
    def _refusal(exc: errors.McpError, *, allow: str | None = None) -> Reply:
        """A transport-level refusal: its HTTP status, with a JSON-RPC error body."""
        if allow is None and isinstance(exc, errors.MethodNotAllowed):
            allow = "GET, POST, DELETE"
        return Reply(exc.http_status or 400, jsonrpc.encode_error(None, exc), allow=allow,
                     authenticate=isinstance(exc, errors.Unauthorized))

    async def _reply(self, send: Any, reply: Reply, *, receive: Any = None, sse_body: bool = False) -> None:
        if reply.stream is not None:
            await self._stream(send, receive, reply)
            return
        headers: list[tuple[bytes, bytes]] = []
        if reply.session_id:
            headers.append((b"mcp-session-id", reply.session_id.encode("ascii")))
        if reply.allow:
            headers.append((b"allow", reply.allow.encode("ascii")))
        if reply.authenticate:
            headers.append((b"www-authenticate", b'Bearer realm="mcp"'))
        headers.extend(reply.extra)
        body = reply.body
        if body is None:
            body = b""
            headers.append((b"content-length", b"0"))
        elif sse_body and reply.status == 200:
            # The client accepts only text/event-stream: one event carrying the response.
            body = sse.event(body)
            headers.extend(_SSE_HEADERS)
            headers.append((b"content-length", str(len(body)).encode()))
        else:
            headers.extend(_JSON_HEADERS)
            headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": reply.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def _stream(self, send: Any, receive: Any, reply: Reply) -> None:
        """Long-lived SSE stream: first frames, then channel-layer events as they come, with
        keep-alive comments, until the client disconnects (or the server closes it)."""
        stream: Stream = reply.stream  # type: ignore[assignment]
        headers = list(_SSE_HEADERS)
        if reply.session_id and not reply.modern:
            headers.append((b"mcp-session-id", reply.session_id.encode("ascii")))
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            first = b"".join(as_event(m) for m in stream.first) or sse.comment("stream open")
            if stream.retry_ms:  # a field of the first event (the priming one), which every SDK reads
                first = b"retry: %d\n" % int(stream.retry_ms) + first
            await send({"type": "http.response.body", "body": first, "more_body": True})
            # The loop runs as its own task and writes with the server's own send: a notification
            # then wakes two coroutine frames, not the nine of the request's whole call chain
            # (fanned out to 1,000 streams, that chain was a tenth of the time). Cancelling this
            # request's task cancels the loop's task with it.
            raw_send = send.send if isinstance(send, _ResponseSend) else send
            await asyncio.ensure_future(run_stream_loop(stream, receive, raw_send))
        finally:
            release(stream)
