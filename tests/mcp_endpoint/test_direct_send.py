"""Frames reach a parked stream on daphne without a task switch, and nothing is lost either way."""

from __future__ import annotations

import asyncio
import functools

import pytest
from daphne.server import Server

from mcp_endpoint.consumers import run_stream_loop
from mcp_endpoint.direct_send import direct_writer
from mcp_endpoint.dispatcher import Stream
from mcp_endpoint.hub import CLOSE
from mcp_endpoint.mailbox import Mailbox

FRAME = b'event: message\ndata: {"n":1}\n\n'


class FakeProtocol:
    """daphne's WebRequest as far as a reply goes: it takes messages, perhaps failing first."""

    def __init__(self, failures: int = 0) -> None:
        self.replies: list[dict] = []
        self.failures = failures

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
    write = direct_writer(send)
    assert write is not None
    write({"type": "http.response.body", "body": b"x", "more_body": True})
    assert protocol.replies == [{"type": "http.response.body", "body": b"x", "more_body": True}]


def test_a_connection_that_is_gone_or_going_takes_nothing():
    protocol = FakeProtocol()
    server, send = daphne_send(protocol)
    write = direct_writer(send)
    server.connections[protocol]["disconnected"] = 1.0
    write({"type": "http.response.body", "body": b"x", "more_body": True})
    del server.connections[protocol]
    write({"type": "http.response.body", "body": b"y", "more_body": True})
    assert protocol.replies == []


def test_any_other_send_keeps_the_asynchronous_path():
    async def send(message):
        return None

    assert direct_writer(send) is None
    assert direct_writer(functools.partial(send)) is None
    assert direct_writer(functools.partial(print, "x")) is None


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
