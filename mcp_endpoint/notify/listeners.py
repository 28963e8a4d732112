"""A stream's listener: what one open stream wants to hear, and the queue its frames go to.

The hub offers a listener the frames it should hear; the transport's stream loop drains its
:class:`~mcp_endpoint.notify.mailbox.Mailbox`. Two sentinels end a stream: ``CLOSE`` for good (a
listen sends its result), ``DROP`` without a final message (the client reconnects).
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..settings import mcp_settings
from .frames import Shape
from .mailbox import Mailbox
from .reads import Viewer


class StreamLimitReached(Exception):
    """Too many open notification streams (per process or per client)."""


def session_group(session_id: str) -> str:
    """Channel-layer group of one legacy session's streams (any process)."""
    return "mcp.session." + hashlib.sha256(session_id.encode()).hexdigest()[:24]


CLOSE = None  # queue sentinel: the server ends the stream for good (a listen sends its result)


class _Drop:
    """Queue sentinel: end the stream without a final message (restart, cancellation, overflow),
    so the client treats it as a disconnect and reconnects."""

    def __repr__(self) -> str:
        return "DROP"


DROP = _Drop()


@dataclass(eq=False)
class Listener:
    """One open stream's interest: what it wants to hear and where frames go.

    The frames offered are ``render``'s output (with ``(frame, position)`` when ``event_ids``),
    or, given a ``shape``, that shape's shared frames (``frames.finish`` with ``tag``)."""

    viewer: Viewer
    render: Callable[[str, dict[str, Any] | None], bytes]
    prompts: bool = True
    resources: bool = True
    uris: set[str] = field(default_factory=set)
    session_id: str | None = None  # legacy GET streams: one delivering stream per session
    owner: Any = None  # whose stream budget it uses (client token, or the anonymous peer address)
    request_id: Any = None  # a listen stream's request id, so its owner can cancel it
    event_ids: bool = False  # frames carry the change-log position (legacy GET resumption)
    # What its transport writes (notify/frames.py): the hub builds a frame once per notification
    # and shape and hands it to every such listener; None renders per listener with `render`.
    shape: Shape | None = None
    tag: bytes | None = None  # a tagged shape's per-listener part: its subscription id, encoded
    queue: Mailbox = field(default_factory=lambda: Mailbox(mcp_settings.LISTENER_QUEUE_SIZE))
    overflowed: bool = False
    opened_at: float = field(default_factory=time.monotonic)

    def offer(self, frame: Any) -> None:
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(frame)
        except asyncio.QueueFull:  # the client stopped reading: end its stream, spare the rest
            self.overflowed = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(DROP)  # it may reconnect (and a legacy stream resume)

