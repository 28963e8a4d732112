"""The long-lived SSE stream loop: one per open stream, waiting on every source at once.

A stream (a legacy GET stream or a 2026-07-28 listen, set up by dispatch/streams.py) runs here
until its client disconnects, the server ends it (a listen result, a DELETE in any process, a
revocation, a restart) or its client stops reading. ``AsyncHttpConsumer`` processes one message
at a time and stops when ``handle()`` returns, so this loop is built to notice a disconnect, a
channel-layer event, a queued frame, a shutdown and the keep-alive timer together (channels
issues #1249, #1302, #1747). On daphne the hub writes a frame to a parked stream itself
(daphne_server.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import threading
import time
from typing import Any

from ..dispatch.streams import Stream
from ..notify.layer_health import health
from ..notify.listeners import DROP
from ..notify.mailbox import Mailbox
from ..notify.revocation import revocations
from ..settings import mcp_settings
from ..wire import sse
from .daphne_server import daphne_connection

logger = logging.getLogger(__name__)


def as_event(item: bytes | tuple[bytes, str]) -> bytes:
    """One queued message as an SSE event; ``(message, id)`` carries an event id (b"" data: a
    priming event, id only, as 2025-11-25 asks for resumable streams)."""
    if isinstance(item, tuple):
        data, event_id = item
        return sse.event(data, event_id=event_id, event_name="message" if data else None)
    return sse.event(item)


def release(stream: Stream) -> None:
    """Run the stream's on_close exactly once, whichever way the stream ended (or never started)."""
    on_close, stream.on_close = stream.on_close, None
    if on_close is not None:
        on_close()


async def _wait_disconnect(receive: Any) -> None:
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


def _channel_layer() -> Any:
    try:
        from channels.layers import get_channel_layer

        return get_channel_layer()
    except Exception:
        logger.exception("channel layer unavailable; MCP streams will carry no notifications")
        return None


class _OpenStreams:
    """Every stream loop running in this process, so a shutdown can end them: servers wait for
    open responses before exiting (uvicorn drains connections before lifespan shutdown), and an
    SSE stream never ends by itself. SIGTERM/SIGINT are chained once, from the main thread."""

    def __init__(self) -> None:
        self.stops: set[Any] = set()  # each has set(): _Stop in stream loops
        self.loop: asyncio.AbstractEventLoop | None = None
        self.hooked = False

    def add(self, stop: Any) -> None:
        self.stops.add(stop)
        if not self.hooked:
            self.loop = asyncio.get_running_loop()
            self._hook()

    def discard(self, stop: Any) -> None:
        self.stops.discard(stop)

    def close_all(self) -> None:
        for stop in list(self.stops):
            stop.set()

    def _hook(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            return
        self.hooked = True
        loop = self.loop
        for signum in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(signum)

            def handler(num: int, frame: Any, previous: Any = previous) -> None:
                live = loop if loop is not None and not loop.is_closed() else None
                if live is not None:
                    live.call_soon_threadsafe(self.close_all)
                if callable(previous):
                    if live is not None:
                        live.call_later(0.2, previous, num, frame)  # let the closing frames go out first
                    else:
                        previous(num, frame)
                elif previous == signal.SIG_DFL:
                    raise KeyboardInterrupt if num == signal.SIGINT else SystemExit(0)

            with contextlib.suppress(ValueError, OSError):  # not the main thread of the main interpreter
                signal.signal(signum, handler)


open_streams = _OpenStreams()


_check_failures: dict[str, float] = {}


async def _still_alive(stream: Stream) -> bool:
    """``stream.alive()``; True (keep the stream, retry next tick) when it cannot be answered."""
    assert stream.alive is not None
    try:
        return await stream.alive()
    except asyncio.CancelledError:
        raise
    except Exception as exc:  # e.g. OperationalError: the database is down
        now = time.monotonic()
        kind = type(exc).__name__
        if now - _check_failures.get(kind, -1e9) > 60:  # once a minute per kind, not per stream
            _check_failures[kind] = now
            logger.warning("stream re-check failed (%r); streams stay open and retry at the next keep-alive",
                           exc)
        return True


async def _join_groups(stream: Stream) -> tuple[Any, str | None]:
    layer = _channel_layer() if stream.groups else None
    if layer is None:
        return None, None
    channel = await layer.new_channel()
    for group in stream.groups:
        await layer.group_add(group, channel)
    return layer, channel


class _Signal:
    """Wakes a stream loop: every source (frame, disconnect, shutdown, timer) calls ``wake``.

    The loop re-checks all of its sources before each wait, so a wake while it is busy is
    never needed later and one future per wait is all it costs."""

    __slots__ = ("future", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future | None = None

    def wake(self, *_: Any) -> None:
        future = self.future
        if future is not None and not future.done():
            future.set_result(None)

    async def wait(self) -> None:
        self.future = self.loop.create_future()
        try:
            await self.future
        finally:
            self.future = None


class _Stop:
    """A stream's shutdown flag in ``open_streams`` (its ``set()`` is what ``close_all`` calls)."""

    __slots__ = ("requested", "wakeup")

    def __init__(self, wakeup: _Signal) -> None:
        self.wakeup = wakeup
        self.requested = False

    def set(self) -> None:
        self.requested = True
        self.wakeup.wake()


async def run_stream_loop(stream: Stream, receive: Any, send: Any) -> None:
    """The stream's event loop, waiting on several sources at once:

    * the client's disconnect (ends the loop: the stream is gone, and on the modern wire that
      is cancellation);
    * channel-layer events for ``stream.groups``, rendered by ``stream.render``; an event
      ``{"type": "mcp.close"}`` ends the stream from the server side;
    * ``stream.frames``, an asyncio queue of ready JSON messages (bytes, or ``(bytes, event id)``)
      fed by an in-process notifier (whole SSE events instead when ``stream.framed``: the hub's
      shared frames, written as they are); ``None`` in the queue ends the stream for good (sending
      ``stream.closing``, the listen result, when there is one), ``hub.DROP`` ends it without a
      final message (cancelled, cut off) so the client reconnects;
    * the keep-alive timer: an SSE comment, after checking ``stream.alive()`` if given.

    A server shutdown (restart) ends every stream without a final message: the listen result
    would tell a client the subscription is over for good, and it would never listen again. So
    does a failed ``alive()`` (a revoked client, an expired or deleted token, a deactivated
    user): both official SDKs take the result as a deliberate end and never listen again,
    while a plain close makes them re-listen, so an expired OAuth token is refreshed first and
    a revoked one meets its 401 (and, if its user authorises it again, listens again).
    If ``stream.alive()`` cannot be answered (the database is down), the stream stays open and
    the check is retried at the next tick: nothing can change while the database is
    unreachable, and ending every stream would only send all clients into reconnect failures."""
    try:
        layer, channel = await _join_groups(stream)
    except Exception:  # e.g. Redis down: the hub's queue and its change-log catch-up still deliver
        health.failure(logger, "channel layer unavailable for this stream; continuing without it")
        layer, channel = None, None
    loop = asyncio.get_running_loop()
    wakeup = _Signal(loop)
    disconnect = asyncio.ensure_future(_wait_disconnect(receive))
    disconnect.add_done_callback(wakeup.wake)
    stop = _Stop(wakeup)
    open_streams.add(stop)
    # The hub's Mailbox wakes this loop directly; any other queue (tests) is read by a task.
    frames = stream.frames
    mailbox = frames if isinstance(frames, Mailbox) else None
    # The hub's shared frames are whole SSE events already (notify/frames.py): written as they are.
    framed = stream.framed
    if mailbox is not None:
        mailbox.waker = wakeup.wake
    layer_task: asyncio.Future | None = None
    frame_task: asyncio.Future | None = None
    keepalive = float(mcp_settings.KEEPALIVE_SECONDS)
    # One timer per stream, re-armed only once it has fired (at most once per interval); frames
    # push the keep-alive back by moving `due`, which the fired timer then waits for. The
    # `alive()` re-check is not pushed back: a revoked client's stream ends within an interval
    # or two even while notifications keep it busy.
    due = loop.time() + keepalive
    checked = loop.time()
    fired: list[bool] = []
    # Credentials changed somewhere (a revocation, mcp_endpoint/notify/revocation.py): re-check now.
    recheck_now: list[bool] = []

    def request_recheck() -> None:
        recheck_now.append(True)
        wakeup.wake()

    unwatch = revocations.watch(stream.credentials, request_recheck) if stream.alive is not None else None

    def on_timer() -> None:
        fired.append(True)
        wakeup.wake()

    # On daphne the hub writes a frame to this stream itself while the loop is parked (no task
    # switch per stream and notification); the end of a stream still goes through the loop, and
    # so does a frame for a client that has stopped reading (the loop cuts it off).
    connection = daphne_connection(send)
    direct = connection.write_body if connection is not None and mailbox is not None else None
    # Frames written while Twisted already held more than its buffer size for this client. Being
    # backed up once is no proof the client stopped reading (a large first frame on a small
    # socket buffer, read steadily, sets it too): it is cut off only once LISTENER_QUEUE_SIZE
    # frames have gone in after that without Twisted ever getting back under its buffer size.
    behind = 0
    queue_size = int(mcp_settings.LISTENER_QUEUE_SIZE)

    def within_allowance(count: int) -> bool:
        """Count `count` frames about to go to this client; False once they would pass the
        allowance (the loop then cuts the client off)."""
        nonlocal behind
        if not connection.backed_up():  # type: ignore[union-attr]
            behind = 0
            return True
        if behind + count > queue_size:
            return False
        behind += count
        return True

    def deliver_now(item: Any) -> bool:
        nonlocal due
        if item is None or item is DROP or not within_allowance(1):
            return False
        try:
            body = item if framed else as_event(item)
            direct(body)  # type: ignore[misc]
        except Exception:  # the loop sends it instead (and ends the stream if the send fails)
            logger.debug("direct write failed; the stream loop takes the frame", exc_info=True)
            return False
        due = loop.time() + keepalive
        return True

    timer = loop.call_at(due, on_timer)

    async def end() -> None:
        body = sse.event(stream.closing) if stream.closing is not None else b""
        await send({"type": "http.response.body", "body": body, "more_body": False})

    try:
        while True:
            if layer is not None and layer_task is None:
                layer_task = asyncio.ensure_future(layer.receive(channel))
                layer_task.add_done_callback(wakeup.wake)
            if frames is not None and mailbox is None and frame_task is None:
                frame_task = asyncio.ensure_future(frames.get())
                frame_task.add_done_callback(wakeup.wake)
            layer_done = layer_task is not None and layer_task.done()
            frame_done = frame_task is not None and frame_task.done()
            mail = mailbox is not None and not mailbox.empty()
            ready = layer_done or frame_done or mail
            now = loop.time()
            tick = now >= due - 0.001  # a timer may fire up to the clock's resolution early
            recheck = stream.alive is not None and (bool(recheck_now) or now >= checked + keepalive - 0.001)
            if not (ready or tick or recheck or disconnect.done() or stop.requested):
                if fired:  # fired early, or frames pushed the keep-alive back: wait for the new time
                    fired.clear()
                    timer = loop.call_at(min(due, checked + keepalive) if stream.alive else due, on_timer)
                if direct is not None and mailbox is not None:
                    mailbox.deliver = deliver_now
                try:
                    await wakeup.wait()
                finally:
                    if direct is not None and mailbox is not None:
                        mailbox.deliver = None
                continue
            if disconnect.done():
                return
            if stop.requested:  # server shutdown (a restart): the client reconnects
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            if tick or recheck:
                # Both next times count from this moment: the next keep-alive counted from after
                # the re-check's query would drift from the next re-check by its duration, and
                # an idle stream would wake (and query) twice per interval.
                now = loop.time()
                if stream.alive is not None:
                    checked = now
                    recheck_now.clear()
                    if not await _still_alive(stream):  # no result: the client re-authenticates, reconnects
                        await send({"type": "http.response.body", "body": b"", "more_body": False})
                        return
                if tick and not ready:
                    await send({"type": "http.response.body", "body": sse.KEEPALIVE, "more_body": True})
                    due = now + keepalive
            if not ready:
                continue
            out: list[bytes] = []
            closing = False
            if layer_done:
                event = layer_task.result()  # type: ignore[union-attr]
                layer_task = None
                if event.get("type") == "mcp.close":
                    closing = True
                else:
                    frame = stream.render(event)
                    if frame is not None:
                        out.append(as_event(frame))
            dropped = False
            items: list[Any] = []
            if frame_done:
                items.append(frame_task.result())  # type: ignore[union-attr]
                frame_task = None
            while mail and mailbox is not None and not mailbox.empty():  # drain what is there: one write
                items.append(mailbox.get_nowait())
                if items[-1] is None or items[-1] is DROP:
                    break
            for item in items:
                if item is None:
                    closing = True
                    break
                if item is DROP:
                    dropped = True
                    break
                out.append(item if framed else as_event(item))
            if out and connection is not None and not within_allowance(len(out)):
                # daphne never makes a send wait, so a client that stopped reading would have
                # Twisted queue its frames without end: cut that one client off instead.
                logger.warning("cutting off a notification stream whose client stopped reading "
                               "(Twisted holds more than its buffer size unsent)")
                connection.abort()
                return
            if out:
                await send({"type": "http.response.body", "body": b"".join(out), "more_body": True})
                due = loop.time() + keepalive
            if dropped:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            if closing:
                await end()
                return
    finally:
        timer.cancel()
        if unwatch is not None:
            unwatch()
        if mailbox is not None:
            mailbox.waker = None
        open_streams.discard(stop)
        for task in (disconnect, layer_task, frame_task):
            if task is not None and not task.done():
                task.cancel()
        if layer is not None:
            for group in stream.groups:
                try:
                    await layer.group_discard(group, channel)
                except Exception:
                    logger.debug("group_discard failed", exc_info=True)
        release(stream)
