"""A stream's bounded frame queue that wakes its stream loop in one step.

The hub offers each notification to every open stream; with 1,000 streams that is 1,000 queue
puts and 1,000 stream wake-ups per change, all on the event loop that also answers requests.
An ``asyncio.Queue`` read through ``asyncio.wait`` costs several loop round trips per frame
(the getter future, the task around ``get()``, wait's completion callback, its waiter) plus a
timeout timer per wait. A Mailbox instead calls its stream loop's ``waker`` directly on
``put_nowait``, so a frame reaches the socket in one hop; and while the stream loop is parked
on a server whose send can be made synchronously (daphne), ``put_nowait`` hands the frame to the
loop's ``deliver`` and it is written before ``put_nowait`` returns, waking nothing.

It keeps the ``asyncio.Queue`` methods the rest of the code and the tests use (``put_nowait``
raising ``asyncio.QueueFull`` past ``maxsize``, ``get_nowait``, ``get``, ``put``, ``empty``,
``qsize``, ``full``). Like ``asyncio.Queue`` it must be used from the event loop's thread.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any


class Mailbox:
    __slots__ = ("_getter", "_items", "deliver", "maxsize", "waker")

    def __init__(self, maxsize: int = 0) -> None:
        self.maxsize = maxsize
        self._items: deque[Any] = deque()
        self._getter: asyncio.Future | None = None  # one pending get() (its only reader is one stream)
        self.waker: Callable[[], None] | None = None  # set by the stream loop draining it
        # Set by a parked stream loop that can write a frame at once
        # (mcp_endpoint/transport/daphne_server.py):
        # an item it takes (returns True) never enters the queue and wakes nobody.
        self.deliver: Callable[[Any], bool] | None = None

    def qsize(self) -> int:
        return len(self._items)

    def empty(self) -> bool:
        return not self._items

    def full(self) -> bool:
        return 0 < self.maxsize <= len(self._items)

    def put_nowait(self, item: Any) -> None:
        deliver = self.deliver
        if deliver is not None and not self._items and deliver(item):
            return
        if self.full():
            raise asyncio.QueueFull
        self._items.append(item)
        getter, self._getter = self._getter, None
        if getter is not None and not getter.done():
            getter.set_result(None)
        if self.waker is not None:
            self.waker()

    async def put(self, item: Any) -> None:
        """For callers written against asyncio.Queue; a full mailbox raises QueueFull (never waits)."""
        self.put_nowait(item)

    def get_nowait(self) -> Any:
        if not self._items:
            raise asyncio.QueueEmpty
        return self._items.popleft()

    async def get(self) -> Any:
        while not self._items:
            self._getter = asyncio.get_running_loop().create_future()
            try:
                await self._getter
            finally:
                self._getter = None
        return self._items.popleft()
