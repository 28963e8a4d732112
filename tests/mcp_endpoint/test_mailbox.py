"""The stream frame queue: asyncio.Queue's contract, plus a direct wake-up of its stream loop."""

from __future__ import annotations

import asyncio

import pytest

from mcp_endpoint.notify.mailbox import Mailbox


async def test_a_mailbox_keeps_order_and_refuses_frames_past_its_size():
    box = Mailbox(2)
    box.put_nowait(b"a")
    await box.put(b"b")
    assert box.full() and box.qsize() == 2
    with pytest.raises(asyncio.QueueFull):
        box.put_nowait(b"c")
    assert [box.get_nowait(), await box.get()] == [b"a", b"b"]
    assert box.empty()
    with pytest.raises(asyncio.QueueEmpty):
        box.get_nowait()


async def test_a_waiting_get_returns_the_next_frame_put():
    box = Mailbox()
    getter = asyncio.ensure_future(box.get())
    await asyncio.sleep(0)
    box.put_nowait(b"frame")
    assert await asyncio.wait_for(getter, 1) == b"frame"


def test_each_put_calls_the_stream_loops_waker():
    box = Mailbox()
    woken = []
    box.waker = lambda: woken.append(True)
    box.put_nowait(b"a")
    box.put_nowait(b"b")
    assert woken == [True, True]
