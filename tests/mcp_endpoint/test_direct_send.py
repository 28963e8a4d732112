"""Frames reach a parked stream on daphne without a task switch, nothing is lost either way, and
a client that stops reading is cut off rather than queued for without end."""

from __future__ import annotations

import asyncio
import functools

import pytest
from daphne.server import Server

from mcp_endpoint.dispatch.streams import Stream
from mcp_endpoint.notify.listeners import CLOSE
from mcp_endpoint.notify.mailbox import Mailbox
from mcp_endpoint.transport.daphne_server import daphne_connection
from mcp_endpoint.transport.stream_loop import run_stream_loop

FRAME = b'event: message\ndata: {"n":1}\n\n'


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = False

    def abortConnection(self) -> None:  # Twisted's interface
        self.aborted = True


class FakeChannel:
    """Twisted's HTTPChannel as far as back-pressure goes: paused once its transport is full."""

    def __init__(self) -> None:
        self._waitingForTransport = False
        self.transport = FakeTransport()


class FakeProtocol:
    """daphne's WebRequest as far as a reply goes: it takes messages, perhaps failing first."""

    def __init__(self, failures: int = 0) -> None:
        self.replies: list[dict] = []
        self.failures = failures
        self.channel = FakeChannel()

    def handle_reply(self, message: dict) -> None:
        if self.failures:
            self.failures -= 1
            raise RuntimeError("transport hiccup")
        self.replies.append(message)


def daphne_send(protocol: FakeProtocol) -> tuple[Server, functools.partial]:
    """The send daphne gives an application: partial(Server.handle_reply, protocol)."""
    server = Server(application=None, endpoints=["tcp:port=0"], signal_handlers=False)
    server.connections = {protocol: {"connected": 0.0}}
    return server, functools.partial(server.handle_reply, protocol)


def test_daphnes_send_is_recognised_and_written_through_as_a_plain_call():
    protocol = FakeProtocol()
    _server, send = daphne_send(protocol)
    connection = daphne_connection(send)
    assert connection is not None
    connection.write({"type": "http.response.body", "body": b"x", "more_body": True})
    assert protocol.replies == [{"type": "http.response.body", "body": b"x", "more_body": True}]


def test_a_connection_that_is_gone_or_going_takes_nothing():
    protocol = FakeProtocol()
    server, send = daphne_send(protocol)
    connection = daphne_connection(send)
    server.connections[protocol]["disconnected"] = 1.0
    connection.write({"type": "http.response.body", "body": b"x", "more_body": True})
    del server.connections[protocol]
    connection.write({"type": "http.response.body", "body": b"y", "more_body": True})
    assert protocol.replies == []


def test_any_other_send_keeps_the_asynchronous_path():
    async def send(message):
        return None

    assert daphne_connection(send) is None
    assert daphne_connection(functools.partial(send)) is None
    assert daphne_connection(functools.partial(print, "x")) is None


async def wait_until_parked(mailbox: Mailbox) -> None:
    for _ in range(100):
        if mailbox.deliver is not None:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the stream loop never parked")


async def parked_daphne_stream(protocol: FakeProtocol, **stream_options) -> tuple[Mailbox, asyncio.Future]:
    """A stream loop on daphne's send for `protocol`, parked and waiting for frames."""
    _server, send = daphne_send(protocol)
    mailbox = Mailbox(10)
    stream = Stream(first=[], groups=[], render=lambda event: None, frames=mailbox, **stream_options)
    loop_task = asyncio.ensure_future(run_stream_loop(stream, asyncio.Event().wait, send))
    await wait_until_parked(mailbox)
    return mailbox, loop_task


@pytest.fixture
def keepalive_off(settings):
    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 30}


@pytest.mark.usefixtures("keepalive_off")
async def test_a_frame_offered_to_a_parked_daphne_stream_is_written_before_the_offer_returns():
    protocol = FakeProtocol()
    mailbox, loop_task = await parked_daphne_stream(protocol, closing=b'{"closing":true}')

    mailbox.put_nowait(b'{"n":1}')
    assert [m["body"] for m in protocol.replies] == [FRAME]  # no await in between: no task switch
    assert mailbox.empty()

    mailbox.put_nowait(CLOSE)  # the end of a stream still goes through the loop
    await asyncio.wait_for(loop_task, 2)
    assert protocol.replies[-1]["more_body"] is False and b'"closing":true' in protocol.replies[-1]["body"]
    assert mailbox.deliver is None and mailbox.waker is None


@pytest.mark.usefixtures("keepalive_off")
async def test_a_failing_direct_write_leaves_the_frame_to_the_stream_loop():
    protocol = FakeProtocol(failures=1)
    mailbox, loop_task = await parked_daphne_stream(protocol)

    mailbox.put_nowait(b'{"n":1}')  # the hub is never handed the stream's failure
    assert protocol.replies == []
    for _ in range(100):
        if protocol.replies:
            break
        await asyncio.sleep(0.005)
    assert [m["body"] for m in protocol.replies] == [FRAME]  # sent once, by the loop
    loop_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop_task


async def test_a_client_that_stopped_reading_is_cut_off_instead_of_queued_for(settings):
    """daphne never makes a send wait: without this, Twisted would queue every later frame. Once
    Twisted holds more than its buffer size, LISTENER_QUEUE_SIZE more frames go in, no more."""
    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 30, "LISTENER_QUEUE_SIZE": 3}
    protocol = FakeProtocol()
    released = []
    mailbox, loop_task = await parked_daphne_stream(protocol, on_close=lambda: released.append(True))
    mailbox.put_nowait(b'{"n":1}')
    assert len(protocol.replies) == 1

    protocol.channel._waitingForTransport = True  # more than Twisted's buffer size unsent
    for n in range(2, 6):
        mailbox.put_nowait(b'{"n":%d}' % n)
    await asyncio.wait_for(loop_task, 2)
    assert len(protocol.replies) == 1 + 3  # nothing more queued for it past LISTENER_QUEUE_SIZE
    assert protocol.channel.transport.aborted and released == [True]


async def test_a_client_that_catches_up_starts_its_allowance_over(settings):
    """Frames written while Twisted is over its buffer size are counted only until it is back
    under it: a client that keeps up, if in bursts, is never cut off."""
    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 30, "LISTENER_QUEUE_SIZE": 3}
    protocol = FakeProtocol()
    mailbox, loop_task = await parked_daphne_stream(protocol)
    for _burst in range(3):
        protocol.channel._waitingForTransport = True
        for n in range(3):
            mailbox.put_nowait(b'{"n":%d}' % n)
        protocol.channel._waitingForTransport = False  # it read them all
        mailbox.put_nowait(b'{"n":3}')
    await asyncio.sleep(0.05)
    assert not loop_task.done() and not protocol.channel.transport.aborted
    assert len(protocol.replies) == 12
    loop_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop_task


def test_backed_up_is_twisteds_own_back_pressure_on_a_real_http_channel():
    """The flag read is the one this Twisted sets: a peer that reads nothing makes it true once
    more than the channel's buffer size is queued."""
    import socket

    from twisted.internet import tcp
    from twisted.web.http import HTTPChannel

    from mcp_endpoint.transport.daphne_server import DaphneConnection

    class Reactor:
        def addWriter(self, writer):  # Twisted's interface
            pass

        def removeWriter(self, writer):
            pass

        def addReader(self, reader):
            pass

        def removeReader(self, reader):
            pass

    listener = socket.create_server(("127.0.0.1", 0))
    peer = socket.create_connection(listener.getsockname())
    ours, _ = listener.accept()
    listener.close()
    ours.setblocking(False)
    channel = HTTPChannel()
    channel.timeOut = None  # no timeout call on the global reactor
    transport = tcp.Connection(ours, channel, Reactor())
    transport.connected = True
    channel.makeConnection(transport)
    request = FakeProtocol()
    request.channel = channel
    connection = DaphneConnection({request: {}}, request)
    try:
        transport.write(b"x" * 1000)
        assert not connection.backed_up()
        transport.write(b"x" * 8_000_000)  # more than any socket buffer takes, and than bufferSize
        assert connection.backed_up()
    finally:
        ours.close()
        peer.close()


@pytest.mark.parametrize("server", ["daphne", "other"])
async def test_a_revoked_client_is_re_checked_while_notifications_keep_its_stream_busy(settings, server):
    """Frames push the keep-alive comment back, never the re-check of the client's rights: a
    revoked client's stream ends within an interval or two however often it is written to."""
    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 0.2}
    protocol = FakeProtocol()
    _server, daphne = daphne_send(protocol)

    async def other(message):
        protocol.replies.append(message)

    checks = []

    async def alive():
        checks.append(True)
        return False  # revoked

    mailbox = Mailbox(10)
    stream = Stream(first=[], groups=[], render=lambda event: None, closing=b'{"closing":true}',
                    frames=mailbox, alive=alive)
    never = asyncio.Event()
    send = daphne if server == "daphne" else other
    loop_task = asyncio.ensure_future(run_stream_loop(stream, never.wait, send))
    started = asyncio.get_running_loop().time()
    while not loop_task.done():
        assert asyncio.get_running_loop().time() - started < 1.0, "the revoked client's stream is still open"
        mailbox.put_nowait(b'{"n":1}')
        await asyncio.sleep(0.05)
    assert checks and protocol.replies[-1] == {"type": "http.response.body", "body": b"", "more_body": False}


class AsyncioReactor:
    """What a Twisted TCP connection asks of its reactor, on the running asyncio loop (daphne
    runs Twisted on asyncio): writes happen as the socket takes them, as in production."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop

    def addWriter(self, writer):  # Twisted's interface
        self.loop.add_writer(writer.fileno(), self._write, writer)

    def removeWriter(self, writer):
        self.loop.remove_writer(writer.fileno())

    def _write(self, writer) -> None:
        why = writer.doWrite()
        if why:
            self.removeWriter(writer)

    def addReader(self, reader):
        pass

    def removeReader(self, reader):
        pass

    def callLater(self, delay, func, *args, **kwargs):
        return self.loop.call_later(delay, lambda: func(*args, **kwargs))


@pytest.mark.usefixtures("keepalive_off")
async def test_a_client_still_reading_a_large_first_frame_is_not_cut_off():
    """A listen's first frames (one per subscribed URI, up to 1,000) can exceed Twisted's 64 KiB
    buffer on top of a small socket buffer (a real network's window) while the client reads
    them steadily: a notification in that time must reach it, not cut it off."""
    import socket
    import threading
    import time

    from twisted.internet import tcp
    from twisted.web.http import HTTPChannel

    loop = asyncio.get_running_loop()
    listener = socket.create_server(("127.0.0.1", 0))
    peer = socket.socket()
    peer.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    peer.connect(listener.getsockname())
    ours, _ = listener.accept()
    listener.close()
    ours.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    ours.setblocking(False)
    channel = HTTPChannel()
    channel.timeOut = None
    transport = tcp.Connection(ours, channel, AsyncioReactor(loop))
    transport.connected = True
    channel.makeConnection(transport)

    class Request(FakeProtocol):
        def handle_reply(self, message: dict) -> None:
            transport.write(message["body"])

    request = Request()
    request.channel = channel
    _server, send = daphne_send(request)

    received = bytearray()
    stop = threading.Event()

    def read_steadily() -> None:  # a healthy client on a slow link: 16 KiB every 20 ms
        peer.settimeout(0.02)
        while not stop.is_set():
            try:
                chunk = peer.recv(16384)
            except TimeoutError:
                continue
            except OSError:
                return
            if not chunk:
                return
            received.extend(chunk)
            time.sleep(0.02)

    reader = threading.Thread(target=read_steadily, daemon=True)
    reader.start()
    first = b"x" * 150_000  # about 1,000 subscribed URIs' first frames
    mailbox = Mailbox(10)
    stream = Stream(first=[], groups=[], render=lambda event: None, frames=mailbox)
    never = asyncio.Event()
    try:
        await send({"type": "http.response.body", "body": first, "more_body": True})
        loop_task = asyncio.ensure_future(run_stream_loop(stream, never.wait, send))
        await wait_until_parked(mailbox)
        assert daphne_connection(send).backed_up()  # the first frame is still on its way
        mailbox.put_nowait(b'{"n":1}')
        deadline = loop.time() + 5
        while b'{"n":1}' not in received and loop.time() < deadline:
            await asyncio.sleep(0.02)
        assert not loop_task.done(), "a client reading its first frame was cut off"
        assert not transport._aborting and b'{"n":1}' in received
        loop_task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await loop_task
    finally:
        stop.set()
        if transport.connected:
            loop.remove_writer(ours.fileno())
        ours.close()
        peer.close()
        reader.join(2)


async def test_an_idle_streams_client_is_re_checked_once_per_keep_alive_interval(settings):
    """The re-check takes a database query: it ran before the keep-alive comment, whose next
    time was then counted from after it, so the comment's tick and the re-check's drifted apart
    by the query's duration and each ran the query: twice the queries and wake-ups per interval
    for every idle stream."""
    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 0.2}
    loop = asyncio.get_running_loop()
    checks: list[float] = []
    comments: list[float] = []

    async def alive():
        checks.append(loop.time())
        await asyncio.sleep(0.02)  # a query's round trip
        return True

    async def send(message):
        if message["body"].startswith(b":"):
            comments.append(loop.time())

    stream = Stream(first=[], groups=[], render=lambda event: None, frames=Mailbox(10), alive=alive)
    never = asyncio.Event()
    loop_task = asyncio.ensure_future(run_stream_loop(stream, never.wait, send))
    await asyncio.sleep(1.1)  # five intervals
    loop_task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await loop_task
    assert 4 <= len(comments) <= 6  # keep-alive comments still on time
    assert 4 <= len(checks) <= 6, f"{len(checks)} re-checks in five intervals"


def test_a_direct_body_write_puts_on_the_wire_what_daphnes_reply_does():
    """``write_body`` (one transport write per stream in a fan-out) writes the very bytes, and
    counts the same length, as daphne's ``handle_reply`` through Twisted's ``Request.write``;
    before the response has started writing it takes daphne's path itself."""
    from types import SimpleNamespace

    from daphne.http_protocol import WebRequest
    from twisted.internet.testing import StringTransport
    from twisted.web import http

    from mcp_endpoint.transport.daphne_server import DaphneConnection

    class Request(http.Request):
        handle_reply = WebRequest.handle_reply
        _response_started = False
        client_addr = None
        server = SimpleNamespace(server_name="", log_action=lambda *args: None)

    def stream() -> tuple[Request, StringTransport]:
        channel = http.HTTPChannel()
        channel.timeOut = None
        transport = StringTransport()
        channel.makeConnection(transport)
        request = Request(channel)
        request.clientproto, request.method = b"HTTP/1.1", b"POST"
        request.handle_reply({"type": "http.response.start", "status": 200,
                              "headers": [(b"content-type", b"text/event-stream")]})
        return request, transport

    frames = [FRAME, b'event: message\ndata: {"n":"\xc3\xa9"}\n\n' * 40]
    replied, replied_wire = stream()
    direct, direct_wire = stream()
    connection = DaphneConnection({direct: {}}, direct)
    through_daphne: list[dict] = []
    daphnes = direct.handle_reply
    direct.handle_reply = lambda message: (through_daphne.append(message), daphnes(message))
    connection.write_body(b": opening\n\n")  # the headers go out first, through daphne's own path
    replied.handle_reply({"type": "http.response.body", "body": b": opening\n\n", "more_body": True})
    for frame in frames:
        replied.handle_reply({"type": "http.response.body", "body": frame, "more_body": True})
        connection.write_body(frame)
    assert direct_wire.value() == replied_wire.value()
    assert direct.sentLength == replied.sentLength
    assert b"Transfer-Encoding: chunked" in direct_wire.value()
    assert [m["body"] for m in through_daphne] == [b": opening\n\n"]  # the frames took the short path
