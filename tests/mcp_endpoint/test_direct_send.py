"""Frames reach a parked stream on daphne without a task switch, nothing is lost either way, and
a client that stops reading is cut off rather than queued for without end."""

from __future__ import annotations

import asyncio
import functools

import pytest
from daphne.server import Server

from mcp_endpoint.consumers import run_stream_loop
from mcp_endpoint.direct_send import daphne_connection
from mcp_endpoint.dispatcher import Stream
from mcp_endpoint.hub import CLOSE
from mcp_endpoint.mailbox import Mailbox

FRAME = b'event: message\ndata: {"n":1}\n\n'


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = False

    def abortConnection(self) -> None:  # noqa: N802 - Twisted's interface
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
    server, send = daphne_send(protocol)
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


@pytest.fixture
def keepalive_off(settings):
    settings.MCP_ENDPOINT = {"KEEPALIVE_SECONDS": 30}


@pytest.mark.usefixtures("keepalive_off")
async def test_a_frame_offered_to_a_parked_daphne_stream_is_written_before_the_offer_returns():
    protocol = FakeProtocol()
    _server, send = daphne_send(protocol)
    mailbox = Mailbox(10)
    stream = Stream(first=[], groups=[], render=lambda event: None, closing=b'{"closing":true}',
                    frames=mailbox)
    never = asyncio.Event()
    loop_task = asyncio.ensure_future(run_stream_loop(stream, never.wait, send))
    await wait_until_parked(mailbox)

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
    _server, send = daphne_send(protocol)
    mailbox = Mailbox(10)
    stream = Stream(first=[], groups=[], render=lambda event: None, frames=mailbox)
    never = asyncio.Event()
    loop_task = asyncio.ensure_future(run_stream_loop(stream, never.wait, send))
    await wait_until_parked(mailbox)

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


@pytest.mark.usefixtures("keepalive_off")
async def test_a_client_that_stopped_reading_is_cut_off_instead_of_queued_for():
    """daphne never makes a send wait: without this, Twisted would queue every later frame."""
    protocol = FakeProtocol()
    _server, send = daphne_send(protocol)
    mailbox = Mailbox(10)
    released = []
    stream = Stream(first=[], groups=[], render=lambda event: None, frames=mailbox,
                    on_close=lambda: released.append(True))
    never = asyncio.Event()
    loop_task = asyncio.ensure_future(run_stream_loop(stream, never.wait, send))
    await wait_until_parked(mailbox)
    mailbox.put_nowait(b'{"n":1}')
    assert len(protocol.replies) == 1

    protocol.channel._waitingForTransport = True  # more than Twisted's buffer size unsent
    mailbox.put_nowait(b'{"n":2}')
    await asyncio.wait_for(loop_task, 2)
    assert len(protocol.replies) == 1  # nothing more queued for it
    assert protocol.channel.transport.aborted and released == [True]


def test_backed_up_is_twisteds_own_back_pressure_on_a_real_http_channel():
    """The flag read is the one this Twisted sets: a peer that reads nothing makes it true once
    more than the channel's buffer size is queued."""
    import socket
    from twisted.internet import tcp
    from twisted.web.http import HTTPChannel

    from mcp_endpoint.direct_send import DaphneConnection

    class Reactor:
        def addWriter(self, writer):  # noqa: N802 - Twisted's interface
            pass

        def removeWriter(self, writer):  # noqa: N802
            pass

        def addReader(self, reader):  # noqa: N802
            pass

        def removeReader(self, reader):  # noqa: N802
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
    assert checks and b'"closing":true' in protocol.replies[-1]["body"]
