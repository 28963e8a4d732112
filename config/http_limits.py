"""One limit on the size of a request's head (request line and headers), answered with a body.

Under daphne, Twisted's HTTPChannel drops the connection without a word when one header line is
longer than its MAX_LENGTH (16 KiB), and answers a bare "400 Bad Request" with no body when all
lines together pass ``totalHeadersSize``: a client sending a long ``Mcp-Name`` (a resource URI)
sees a network error, not a reason. Daphne offers no hook for its HTTP channel, so
:func:`install_twisted_limits` adjusts Twisted's class in the serving process: an oversized head
is answered "431 Request Header Fields Too Large" and other malformed heads "400 Bad Request",
both with a JSON-RPC error body and ``Connection: close``.

Servers that accept bigger heads (uvicorn with httptools takes megabytes) get the same answer
from :class:`RequestHeadLimit`, the outermost ASGI layer. The limit is MAX_REQUEST_HEAD_BYTES.
"""

from __future__ import annotations

import json
import sys
from typing import Any

DEFAULT_MAX_REQUEST_HEAD_BYTES = 16 * 1024
# After refusing a request, how long the rest of it is read and discarded before the connection
# is dropped, and how much of its body is read at most.
LINGER_SECONDS = 5.0
MAX_DISCARDED_BODY_BYTES = 8 * 1024 * 1024


def _error_response(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    head = (f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode("ascii")
    return head + body


def too_large_message(limit: int) -> str:
    return (f"Request Header Fields Too Large: the request line and headers may be at most {limit:,} bytes "
            "together")


def install_twisted_limits(limit: int = DEFAULT_MAX_REQUEST_HEAD_BYTES) -> bool:
    """Make Twisted's HTTP channel answer oversized and malformed request heads with a body.
    Only where Twisted is already serving (daphne imported it before loading the application);
    returns whether the channel was adjusted (idempotent)."""
    http = sys.modules.get("twisted.web.http")
    if http is None:
        return False
    channel = http.HTTPChannel
    channel.MAX_LENGTH = limit  # one line
    channel.totalHeadersSize = limit  # all lines of one request head
    if getattr(channel, "_registry_head_limits", False):
        return True
    too_large = _error_response(431, "Request Header Fields Too Large", too_large_message(limit))
    bad_request = _error_response(400, "Bad Request", "Bad Request: malformed request line or headers")
    original_line_received = channel.lineReceived

    def refuse(self: Any, response: bytes) -> None:
        # Answer, then close only our side and read on, discarding: closing a socket with unread
        # input resets the connection, and the client would lose the answer with it.
        self.dataReceived = self.lineReceived = lambda *args: None
        self.transport.write(response)
        try:
            self.transport.loseWriteConnection()
        except (AttributeError, NotImplementedError):
            self.loseConnection()
            return
        from twisted.internet import reactor

        reactor.callLater(LINGER_SECONDS, self.transport.abortConnection)

    def lineReceived(self: Any, line: bytes) -> None:
        if self._receivedHeaderSize + len(line) > self.totalHeadersSize:
            refuse(self, too_large)
            return
        original_line_received(self, line)

    channel.lineReceived = lineReceived
    channel.lineLengthExceeded = lambda self, line: refuse(self, too_large)
    channel._respondToBadRequestAndDisconnect = lambda self: refuse(self, bad_request)
    channel._registry_head_limits = True
    return True


class RequestHeadLimit:
    """ASGI middleware: HTTP requests whose path, query and headers together exceed ``limit``
    bytes get 431 with a JSON-RPC error body, before any application code sees them."""

    def __init__(self, app: Any, limit: int = DEFAULT_MAX_REQUEST_HEAD_BYTES) -> None:
        self.app = app
        self.limit = limit

    def __getattr__(self, name: str) -> Any:
        # The wrapped application's own attributes (the router's mcp_app, ...) stay reachable.
        if name == "app":
            raise AttributeError(name)
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            size = len(scope.get("raw_path") or scope.get("path", "").encode()) + len(scope.get("query_string", b""))
            size += sum(len(name) + len(value) + 4 for name, value in scope.get("headers") or ())
            if size > self.limit:
                await _discard_body(receive)
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {
                    "code": -32600, "message": too_large_message(self.limit)}}).encode()
                await send({"type": "http.response.start", "status": 431, "headers": [
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close")]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


async def _discard_body(receive: Any) -> None:
    """Read what the client still sends (within bounds), so that answering and closing does not
    reset a connection whose unread input would make the client lose the answer."""
    discarded = 0
    while discarded <= MAX_DISCARDED_BODY_BYTES:
        message = await receive()
        if message.get("type") != "http.request":
            return
        discarded += len(message.get("body", b""))
        if not message.get("more_body"):
            return
