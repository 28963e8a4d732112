"""Everything this project knows of daphne's and Twisted's internals, behind one guard.

daphne offers no hook for its HTTP channel or its connections, so four improvements reach into
private names of Twisted (``twisted.web.http.HTTPChannel``, ``twisted.internet.tcp.Connection``)
and daphne (``Server.handle_reply`` and its ``connections``):

* **head limits**: an oversized request head gets "431" and a malformed one "400", both with a
  JSON-RPC error body (Twisted drops the connection without a word when one header line passes
  its MAX_LENGTH, and answers a bare "400" when all of them pass ``totalHeadersSize``);
* **body limits**: a ``Content-Length`` over the limit of its path gets "413" before one byte of
  the body is read, and a chunked body as soon as it passes it (Twisted otherwise spools every
  body, whatever its size, to a temporary file before the application sees it);
* **head timeout**: a new connection that has not sent its request head within the timeout,
  or a head begun and not finished within it, ends the connection, with "408" when part of it
  came (Twisted's idle timer restarts at every byte, so a client dripping a header line held its
  connection for as long as it liked);
* **eager writes**: a TCP write with nothing queued goes to the socket at once instead of
  arming the reactor (two ``epoll_ctl`` calls and a loop turn per write; for a notification to
  1,000 streams most of the cost: bench/notify.py);
* **direct send**: the hub writes a frame to a parked daphne stream itself, without waking its
  task, as the one chunk ``Request.write`` would make, and reads Twisted's back-pressure to cut
  off a client that stopped reading (:class:`DaphneConnection`).

Neither Twisted nor daphne promises these names: the guard beside this module
(mcp_endpoint/transport/daphne_guard.py) lists every one of them and checks it on the installed
versions, and each feature whose names are not all there falls back to the plain path: Twisted's
and daphne's own behaviour, correct and only slower or blunter. :func:`install` logs such a
fallback once, and ``manage.py check`` warns about it. pyproject.toml bounds Twisted and daphne
to the versions this was tested with. USES below says which functions here each feature runs,
so a test holds the guard's lists to this code.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .daphne_guard import (
    BODY_LIMITS,
    DIRECT_SEND,
    EAGER_WRITES,
    FEATURES,
    HEAD_LIMITS,
    HEAD_TIMEOUT,
    available,
    log_fallback,
)

# After refusing a request, how long the rest of it is read and discarded before the connection
# is dropped: closing a socket with unread input resets it, and the client would lose the answer.
LINGER_SECONDS = 5.0

# The functions each feature runs: tests/mcp_endpoint/test_daphne_server.py holds the guard's name
# lists (daphne_guard.guarded_names) to the Twisted/daphne names this code touches.
USES = {
    HEAD_LIMITS: ("_install_head_limits", "_refuse"),
    BODY_LIMITS: ("_install_body_limits", "_refuse"),
    HEAD_TIMEOUT: ("_install_head_timeout", "_start_head_timer", "_sweep_heads", "_head_timed_out",
                   "_cancel_head_timer", "_scheduler", "_refuse"),
    EAGER_WRITES: ("_install_eager_writes",),
    DIRECT_SEND: ("DaphneConnection", "daphne_connection"),
}


# ------------------------------------------------------------------------------ installation

@dataclass(frozen=True)
class Limits:
    """What the HTTP channel enforces: ``head_bytes`` for a request line plus headers,
    ``body_bytes(path)`` the largest body for a path (None: no limit), ``head_seconds`` for a
    request head to arrive (0: no limit), and ``answer(status, limit)`` the whole response to
    send when a request is refused for passing ``limit``."""

    head_bytes: int
    body_bytes: Callable[[bytes], int | None]
    head_seconds: float
    answer: Callable[[int, float], bytes]


_limits: list[Limits] = []  # the one in force; read by the patched methods at call time


def install(limits: Limits) -> dict[str, bool]:
    """Install every feature whose names are all present, where Twisted is serving (daphne
    imported it before loading the application); log each fallback once. Returns which features
    are in force. Idempotent; a second call only replaces the limits."""
    _limits[:] = [limits]
    if "twisted.web.http" not in sys.modules:
        return dict.fromkeys(FEATURES, False)
    installed = {}
    for feature, patch in ((HEAD_LIMITS, _install_head_limits), (BODY_LIMITS, _install_body_limits),
                           (HEAD_TIMEOUT, _install_head_timeout), (EAGER_WRITES, _install_eager_writes)):
        if available(feature):
            patch()
            installed[feature] = True
        else:
            log_fallback(feature)
            installed[feature] = False
    installed[DIRECT_SEND] = available(DIRECT_SEND)
    if not installed[DIRECT_SEND]:
        log_fallback(DIRECT_SEND)
    return installed


def _current() -> Limits:
    return _limits[0]


def _refuse(channel: Any, status: int, limit: float) -> None:
    """Answer ``status`` and stop parsing this connection; close our side and read on,
    discarding, for LINGER_SECONDS, then drop it."""
    channel._registry_refused = True
    for name in ("dataReceived", "lineReceived", "rawDataReceived", "allContentReceived"):
        setattr(channel, name, lambda *args: None)
    _cancel_head_timer(channel)
    transport = channel.transport
    transport.write(_current().answer(status, limit))
    try:
        transport.loseWriteConnection()
    except (AttributeError, NotImplementedError):
        channel.loseConnection()
        return
    channel.callLater(LINGER_SECONDS, transport.abortConnection)


def _install_head_limits() -> None:
    from twisted.web import http

    channel: Any = http.HTTPChannel  # patched in place (Twisted's types have no assignable methods)
    channel.MAX_LENGTH = _current().head_bytes  # one line
    channel.totalHeadersSize = _current().head_bytes  # all lines of one request head
    if getattr(channel, "_registry_head_limits", False):
        return
    original_line_received = channel.lineReceived

    def lineReceived(self: Any, line: bytes) -> None:  # Twisted's name
        if self._receivedHeaderSize + len(line) > self.totalHeadersSize:
            _refuse(self, 431, self.totalHeadersSize)
            return
        original_line_received(self, line)

    channel.lineReceived = lineReceived
    channel.lineLengthExceeded = lambda self, line: _refuse(self, 431, self.totalHeadersSize)
    channel._respondToBadRequestAndDisconnect = lambda self: _refuse(self, 400, 0)
    channel._registry_head_limits = True


def _install_body_limits() -> None:
    from twisted.web import http

    channel: Any = http.HTTPChannel  # both patched in place
    request: Any = http.Request
    if getattr(channel, "_registry_body_limits", False):
        return
    original_all_headers = channel.allHeadersReceived
    original_chunk = request.handleContentChunk

    def allHeadersReceived(self: Any) -> None:
        limit = _current().body_bytes(self._path)
        if limit is not None and self.length is not None and self.length > limit:
            _refuse(self, 413, limit)  # before gotLength: no file is made for the body
            return
        self.requests[-1]._registry_body_limit = limit
        self.requests[-1]._registry_body_left = limit
        original_all_headers(self)

    def handleContentChunk(self: Any, data: bytes) -> None:
        left = getattr(self, "_registry_body_left", None)
        if left is not None:
            left -= len(data)
            self._registry_body_left = left
            if left < 0:  # a chunked body past the limit
                if self.channel is not None and not getattr(self.channel, "_registry_refused", False):
                    _refuse(self.channel, 413, self._registry_body_limit)
                return
        original_chunk(self, data)

    channel.allHeadersReceived = allHeadersReceived
    request.handleContentChunk = handleContentChunk
    channel._registry_body_limits = True


# Channels waiting for a request head, with their deadline. One sweep a second over the few
# that are still waiting (most heads arrive in the first read) costs less than a timer per
# connection: 10,000 streams connecting would otherwise create and cancel 10,000 of them.
_waiting: dict[Any, float] = {}
_sweep: list[Any] = []  # the scheduled sweep, if any
SWEEP_SECONDS = 1.0
clock: Any = None  # what schedules the sweep and tells the time; None: Twisted's reactor (tests set a Clock)


def _scheduler() -> Any:
    if clock is not None:
        return clock
    from twisted.internet import reactor

    return reactor


def _cancel_head_timer(channel: Any) -> None:
    _waiting.pop(channel, None)


def _start_head_timer(channel: Any) -> None:
    seconds = _current().head_seconds
    if not seconds or seconds <= 0:
        return
    scheduler = _scheduler()
    _waiting[channel] = scheduler.seconds() + seconds
    if not _sweep:
        _sweep.append(scheduler.callLater(min(SWEEP_SECONDS, seconds), _sweep_heads))


def _sweep_heads() -> None:
    _sweep.clear()
    scheduler = _scheduler()
    now = scheduler.seconds()
    for channel, deadline in list(_waiting.items()):
        if deadline <= now:
            _waiting.pop(channel, None)
            _head_timed_out(channel)
    if _waiting:
        _sweep.append(scheduler.callLater(SWEEP_SECONDS, _sweep_heads))


def _head_timed_out(channel: Any) -> None:
    if getattr(channel, "_registry_refused", False) or channel.transport is None:
        return
    if getattr(channel, "_registry_head_bytes", False):
        _refuse(channel, 408, _current().head_seconds)  # part of a head came: say why
    else:
        channel._registry_refused = True
        channel.transport.loseConnection()  # a new connection that sent nothing: nothing to answer


def _install_head_timeout() -> None:
    """A new connection must send its first request head within the timeout, and any head, once
    its first byte came, must be complete within the timeout (a byte now and then does not
    extend it). A kept-alive connection waiting for its next request is left to Twisted's idle
    timeout: closing it sooner would break clients that reuse an idle connection without retrying."""
    from twisted.web import http

    channel: Any = http.HTTPChannel  # patched in place
    if getattr(channel, "_registry_head_timeout", False):
        return
    original_made, original_lost = channel.connectionMade, channel.connectionLost
    original_all_headers, original_done = channel.allHeadersReceived, channel.requestDone
    original_data = channel.dataReceived

    def connectionMade(self: Any) -> None:
        original_made(self)
        self._registry_awaiting_head = True
        self._registry_head_bytes = False
        _start_head_timer(self)

    def dataReceived(self: Any, data: bytes) -> None:
        if self.__dict__.get("_registry_awaiting_head") and not self.__dict__.get("_registry_head_bytes"):
            self._registry_head_bytes = True
            if self not in _waiting:
                _start_head_timer(self)  # the next head on a kept-alive connection has begun
        original_data(self, data)

    def allHeadersReceived(self: Any) -> None:
        _cancel_head_timer(self)  # the head is here: streams and slow applications are not timed
        self._registry_awaiting_head = False
        original_all_headers(self)

    def requestDone(self: Any, request: Any) -> None:
        self._registry_awaiting_head = bool(self.persistent)
        self._registry_head_bytes = False
        original_done(self, request)

    def connectionLost(self: Any, reason: Any) -> None:
        _cancel_head_timer(self)
        original_lost(self, reason)

    channel.connectionMade = connectionMade
    channel.connectionLost = connectionLost
    channel.dataReceived = dataReceived
    channel.allHeadersReceived = allHeadersReceived
    channel.requestDone = requestDone
    channel._registry_head_timeout = True


def _install_eager_writes() -> None:
    """TCP writes with nothing queued before them go straight to the socket.

    Only a plain send is taken: a connection that started TLS (``startTLS``: its bytes belong
    to the TLS layer, a send would put plaintext on the wire), one being aborted (what is
    written after ``abortConnection`` is dropped) and a UNIX connection with file descriptors
    queued (they travel with the next bytes, through its own ``writeSomeData``) keep Twisted's
    path. Whatever the socket does not take (a full buffer, an error) goes through Twisted's
    buffered path, which keeps the order, pauses producers and reports a lost connection."""
    from twisted.internet import tcp

    connection: Any = tcp.Connection  # patched in place
    if getattr(connection, "_registry_eager_writes", False):
        return
    buffered_write = connection.write
    buffered_write_sequence = connection.writeSequence

    def write(self: Any, data: bytes) -> None:
        if (type(data) is bytes and data and not self._tempDataLen and self.offset == len(self.dataBuffer)
                and self.connected and not self.disconnecting and not self._writeDisconnected
                and not self.TLS and not self._aborting and not getattr(self, "_sendmsgQueue", None)):
            try:
                sent = self.socket.send(data)
            except OSError:  # full (EAGAIN, ENOBUFS) or lost: Twisted's path retries or reports it
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
        buffered_write(self, data)

    def write_sequence(self: Any, iovec: Sequence[bytes]) -> None:
        if type(iovec) in (list, tuple) and iovec and all(type(part) is bytes for part in iovec):
            write(self, b"".join(iovec))
            return
        buffered_write_sequence(self, iovec)

    connection.write = write
    connection.writeSequence = write_sequence
    connection._registry_eager_writes = True


# ------------------------------------------------------------------------------ direct send

class DaphneConnection:
    """One daphne HTTP connection, reached through the ``send`` daphne gave the application.

    daphne's ``send`` is ``functools.partial(Server.handle_reply, protocol)``, a coroutine that
    never suspends: it checks that the connection is still there and calls
    ``protocol.handle_reply(message)``, which writes to Twisted at once. :meth:`write` does the
    same two steps as a plain call, so the hub can write a frame to an idle stream while it
    walks the listeners (mcp_endpoint/notify/mailbox.py) instead of waking 1,000 stream tasks.

    Because daphne's send never waits, a client that stops reading never slows its stream
    down: Twisted queues whatever the kernel does not take, without end. :meth:`backed_up`
    reads Twisted's own high-water mark, so the stream loop can cut that one client off
    (``LISTENER_QUEUE_SIZE``'s promise, mcp_endpoint/transport/consumers.py)."""

    __slots__ = ("connections", "protocol")

    def __init__(self, connections: dict[Any, dict[str, Any]], protocol: Any) -> None:
        self.connections = connections
        self.protocol = protocol

    def write(self, message: dict[str, Any]) -> None:
        """What ``await send(message)`` does (daphne's Server.handle_reply), as a plain call: a
        connection that is gone or going takes nothing."""
        details = self.connections.get(self.protocol)
        if details is None or details.get("disconnected", None):
            return
        self.protocol.handle_reply(message)

    def write_body(self, body: bytes) -> None:
        """``write`` of one more chunk of a response already under way, with less Python per
        stream (a fan-out makes thousands of these in a row): the chunk Twisted's
        ``Request.write`` would make (HTTP/1.1 chunked), handed to the connection's transport
        in one call, and Twisted's byte count kept. Anything else (no chunked response started
        yet, a request finished or gone, an unknown protocol) goes through :meth:`write`."""
        request = self.protocol
        details = self.connections.get(request)
        if details is None or details.get("disconnected", None):
            return
        channel = getattr(request, "channel", None)
        if (channel is None or not getattr(request, "_response_started", False)
                or not getattr(request, "startedWriting", False) or not getattr(request, "chunked", False)
                or getattr(request, "finished", True) or getattr(request, "_disconnected", True) or not body):
            self.protocol.handle_reply({"type": "http.response.body", "body": body, "more_body": True})
            return
        request.sentLength += len(body)
        channel.transport.write(b"%x\r\n%b\r\n" % (len(body), body))

    def backed_up(self) -> bool:
        """Twisted holds more unsent bytes for this client than its buffer size (64 KiB on top of
        what the kernel took): the client is not reading."""
        channel = getattr(self.protocol, "channel", None)
        return bool(getattr(channel, "_waitingForTransport", False))

    def abort(self) -> None:
        """Drop the connection now, with whatever is still queued for it (a client that does not
        read would otherwise hold that memory for as long as it keeps the socket open)."""
        transport = getattr(getattr(self.protocol, "channel", None), "transport", None)
        if transport is not None:
            transport.abortConnection()


def daphne_connection(send: Any) -> DaphneConnection | None:
    """The connection behind ``send`` when ``send`` is daphne's and direct sends are available;
    None for any other server (its streams keep the asynchronous path, always correct)."""
    func = getattr(send, "func", None)
    server = getattr(func, "__self__", None)
    if not (isinstance(send, functools.partial) and getattr(func, "__name__", None) == "handle_reply"
            and type(server).__module__ == "daphne.server" and len(send.args) == 1 and not send.keywords):
        return None
    if not available(DIRECT_SEND):
        log_fallback(DIRECT_SEND)
        return None
    protocol = send.args[0]
    connections = getattr(server, "connections", None)
    if not isinstance(connections, dict) or not callable(getattr(protocol, "handle_reply", None)):
        return None
    return DaphneConnection(connections, protocol)
