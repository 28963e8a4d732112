"""Per-process notification hub: registry changes in, per-listener MCP notifications out.

Changes reach a process three ways, and each change-log id is handled once whichever way
arrives first:
  1. this process committed it (``registry_changed`` after commit), handed over by
     notify/handoff.py;
  2. another process committed it and sent it over the channel layer (Redis when scaled out);
  3. the catch-up poller reads the change log every POLL_SECONDS, so a change made while the
     channel layer was down, or by a process with no layer at all (a management command on
     the embedded default), still arrives. It asks for every id it has not applied, not just
     those after the newest (see applied.py: ids are not commit order), and a periodic
     consistency check rebuilds any catalog entry that disagrees with the database anyway.
Both of the latter are notify/intake.py's loops, which the hub starts.

For every batch the hub rebuilds the catalog of each label its listeners are bound to and
compares it with the catalog it last judged them against (the pure rules: notify/diff.py): a
listener hears about a change only if what *it* is served (its label, its scope, its subscribed
URIs) actually changed. Listeners are queues drained by their own stream loop, so a slow or
stuck client never delays the others; a queue that overflows closes that one stream. On daphne
the hub writes a frame to an idle stream itself, and a client whose connection Twisted reports
backed up is cut off (mcp_endpoint/transport/daphne_server.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any

from channels.db import database_sync_to_async

from ..settings import mcp_settings
from ..wire.sessions import stored_subscriptions
from . import intake, layer_health
from .applied import AppliedIds
from .diff import (
    RESOURCE_UPDATED,
    Note,
    Told,
    diff_catalogs,
    dynamic_updates,
    notifications_for,
    touched_keys,
)
from .frames import FrameCache, finish
from .listeners import DROP, Listener, StreamLimitReached, session_group
from .reads import (
    Catalog,
    Change,
    awaiting_build,
    bump_generation,
    cached_catalog,
    followers,
    forget_catalogs,
    held_labels,
    parts_behind,
    recent_ids,
    refresh_catalog,
    repairs,
    served_fingerprint,
    stale_keys,
    warm,
)

log = logging.getLogger(__name__)

INITIAL_WINDOW = 2000  # ids below the newest at start that may still be in flight
FANOUT_SLICE = 50  # listeners offered a change between two yields to the event loop


class Hub:
    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self.budgets: Counter[Any] = Counter()  # open streams per budget key, kept by _add/_remove
        self.held: set[int] = set()  # change ids committed by a request still being answered here
        self.held_changes: dict[int, Change] = {}  # those changes, so a consistency check waits for them too
        self.queued: dict[int, Change] = {}  # changes claimed here whose delivery waits for the lock
        self.told: dict[str, Told] = {}  # per label with listeners: what they were last judged against
        self.ids = AppliedIds()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: list[asyncio.Task] = []
        self.lock: asyncio.Lock | None = None
        self.delivered = 0
        self.rebuilt = 0  # entries a consistency check found stale and rebuilt
        self.last_check = time.monotonic()
        self.starting: asyncio.Task | None = None

    @property
    def position(self) -> int:
        """The change-log position this process has applied: every id at or below it is in."""
        return self.ids.floor

    # ----------------------------------------------------------- lifecycle
    async def start(self) -> None:
        """Start the poller and the channel-layer reader in the running loop (idempotent)."""
        loop = asyncio.get_running_loop()
        if self.loop is loop and self.tasks:
            return
        failed = self.starting is not None and self.starting.done() and (
            self.starting.cancelled() or self.starting.exception() is not None)
        if self.loop is not loop or self.starting is None or failed:
            # The first of many concurrent registrations starts the tasks; the others wait for it.
            self.loop = loop
            self.lock = asyncio.Lock()
            self.starting = loop.create_task(self._start_tasks(loop), context=contextvars.Context())
        await asyncio.shield(self.starting)

    async def _start_tasks(self, loop: asyncio.AbstractEventLoop) -> None:
        top, present = await database_sync_to_async(recent_ids)(INITIAL_WINDOW)
        # What was committed before this process listened is not news; ids missing just below
        # the newest may be transactions still open, so they are watched as gaps.
        ids = AppliedIds(max(0, top - INITIAL_WINDOW))
        ids.seed(present, top)
        self.ids = ids
        tasks = [loop.create_task(intake.poll_forever(self), name="mcp-hub-poller",
                                  context=contextvars.Context())]
        layer = intake.channel_layer()
        if layer is not None and not intake.in_memory(layer):
            layer_health.install_filter()
            tasks.append(loop.create_task(intake.read_layer(self, layer), name="mcp-hub-layer",
                                          context=contextvars.Context()))
            tasks.append(loop.create_task(intake.watch_layer(layer), name="mcp-hub-layer-health",
                                          context=contextvars.Context()))
        self.tasks = tasks

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.tasks = []
        self.starting = None

    @staticmethod
    def budget_key(listener: Listener) -> Any:
        """Whose stream budget a listener uses: its client token, or (anonymous) its peer address."""
        if listener.owner is not None:
            return listener.owner
        return (listener.viewer.client_id, listener.viewer.client_name)

    async def register(self, listener: Listener) -> None:
        """Add a stream's listener; raises StreamLimitReached past the configured limits."""
        if len(self.listeners) >= int(mcp_settings.MAX_STREAMS):
            raise StreamLimitReached(
                f"this server holds its limit of {mcp_settings.MAX_STREAMS} open streams")
        if self.count_for(self.budget_key(listener)) >= int(mcp_settings.MAX_STREAMS_PER_CLIENT):
            raise StreamLimitReached(
                f"a client may hold at most {mcp_settings.MAX_STREAMS_PER_CLIENT} open streams; "
                "close some first")
        await self.start()
        label = listener.viewer.label
        if label not in self.told:
            # Built in the background (registry/serving/warmup.py), so list pages read meanwhile are not
            # queued behind the build in the database executor. Kept (and advanced by every
            # delivery) from now on, so later listeners of the label are judged on the same record.
            with awaiting_build():  # a listen request waiting here: the build need not give way to it
                catalog = await asyncio.shield(asyncio.wrap_future(warm(label)))
            self.told.setdefault(label, Told.of(catalog))
        if listener.session_id is not None:  # one delivering GET stream per legacy session
            for other in [each for each in self.listeners if each.session_id == listener.session_id]:
                self._remove(other)
                other.offer(DROP)
        self._add(listener)

    def unregister(self, listener: Listener) -> None:
        self._remove(listener)

    def _add(self, listener: Listener) -> None:
        if listener not in self.listeners:
            self.listeners.add(listener)
            self.budgets[self.budget_key(listener)] += 1

    def _remove(self, listener: Listener) -> None:
        if listener in self.listeners:
            self.listeners.discard(listener)
            key = self.budget_key(listener)
            self.budgets[key] -= 1
            if self.budgets[key] <= 0:
                del self.budgets[key]

    def count_for(self, budget_key: Any) -> int:
        """Open streams on `budget_key`'s budget: a counter, since 10,000 streams reconnecting
        after a restart would otherwise scan every stream once each (quadratic)."""
        return self.budgets.get(budget_key, 0)

    def cancel(self, owner: Any, request_id: Any) -> bool:
        """``notifications/cancelled`` for a listen request: end that stream without a result.

        Only the caller's own streams match (request ids are unique per client only)."""
        found = False
        for listener in [each for each in self.listeners
                         if each.request_id is not None and each.owner == owner
                         and each.request_id == request_id and type(each.request_id) is type(request_id)]:
            self._remove(listener)
            listener.offer(DROP)
            found = True
        return found

    def set_session_subscriptions(self, session_id: str, uris: Iterable[str]) -> None:
        for listener in self.listeners:
            if listener.session_id == session_id:
                listener.uris = set(uris)

    async def session_subscriptions_changed(self, session_id: str, uris: Iterable[str]) -> None:
        """A legacy session (un)subscribed: update its stream here and in every other process.

        The channel layer is the fast path; without it, the other process re-reads the
        session's row before it delivers the next change (see ``_deliver``)."""
        uris = sorted(uris)
        self.set_session_subscriptions(session_id, uris)
        layer = intake.channel_layer()
        if layer is not None and not intake.in_memory(layer):
            try:
                await layer.group_send(session_group(session_id), {"type": "mcp.subscriptions", "uris": uris})
            except Exception:
                layer_health.health.failure(
                    log, "could not share session subscriptions over the channel layer")

    def close_all(self) -> None:
        """Server shutdown for a restart: every stream ends without a final result, so clients
        treat it as a disconnect and reconnect (to this server once back, or another worker)."""
        for listener in list(self.listeners):
            listener.offer(DROP)
        self.listeners.clear()
        self.budgets.clear()

    # ----------------------------------------------------------- intake
    def submit_threadsafe(self, changes: list[Change], *, release: bool = False) -> None:
        """Hand committed changes to the hub from any thread (the committing request's);
        `release` ends a hold on them (hold_threadsafe). A second offer of the same ids is a no-op."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return

        def begin() -> None:
            if release:
                self.held.difference_update(c.id for c in changes)
                for change in changes:
                    self.held_changes.pop(change.id, None)
            # A fresh context: the committing thread's context (asgiref's thread-sensitive markers
            # included) must not leak into the hub, or its database calls may refuse to run.
            loop.create_task(self.process(changes), context=contextvars.Context())

        if _running_loop() is loop:
            begin()
        else:
            loop.call_soon_threadsafe(begin, context=contextvars.Context())

    def hold_threadsafe(self, changes: list[Change], seconds: float) -> None:
        """Deliver nothing of `changes` here until released (the committing request finished,
        see handoff.py), whichever way they arrive (this process's own channel-layer event, the
        poller); after `seconds` they are released anyway."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        ids = {c.id for c in changes}

        def hold() -> None:
            self.held.update(ids)
            self.held_changes.update((c.id, c) for c in changes)
            loop.call_later(seconds, lambda: self.submit_threadsafe(changes, release=True))

        loop.call_soon_threadsafe(hold, context=contextvars.Context())

    async def process(self, batch: list[Change]) -> None:
        if self.held:
            batch = [c for c in batch if c.id not in self.held]
        claimed = set(self.ids.claim(c.id for c in batch))
        if not claimed:
            return
        fresh = list({c.id: c for c in batch if c.id in claimed}.values())
        bump_generation()  # perhaps committed elsewhere: retire cached catalogs
        assert self.lock is not None
        self.queued.update((c.id, c) for c in fresh)
        try:
            async with self.lock:
                try:
                    await self._deliver(fresh)
                except Exception:
                    # E.g. the database was briefly unavailable. Serve nothing built on a partial
                    # refresh, and let the catch-up poller bring these changes again.
                    log.warning("could not deliver changes %s; retrying from the change log", sorted(claimed),
                                exc_info=True)
                    forget_catalogs()
                    self.ids.release(claimed)
                    return
        finally:
            for change in fresh:
                self.queued.pop(change.id, None)
        self.ids.done(claimed)

    async def _refresh_session_subscriptions(self) -> None:
        """Re-read the subscriptions of this process's legacy GET streams from their rows.

        A ``resources/subscribe`` served by another worker reaches this one over the channel
        layer; when that is down, this read (before every delivery) still picks it up."""
        sessions = {each.session_id for each in self.listeners if each.session_id is not None}
        if not sessions:
            return
        stored = await database_sync_to_async(stored_subscriptions)(sorted(sessions))
        for listener in self.listeners:
            uris = stored.get(listener.session_id) if listener.session_id is not None else None
            if uris is not None:
                listener.uris = set(uris)

    async def _deliver(self, batch: list[Change]) -> None:
        started = time.perf_counter()
        delivered_before = self.delivered
        await self._refresh_session_subscriptions()
        position = self.ids.floor_if_done(c.id for c in batch)
        # Every label this process serves from memory, streams or not: a worker answering only
        # requests keeps its catalogs current by the changed keys (a few queries) instead of
        # leaving them stale for a full rebuild on the next request (about 0.85 s at 20k+20k).
        labels = {each.viewer.label for each in self.listeners} | set(self.told) | held_labels()
        for label in sorted(labels):
            new = await database_sync_to_async(refresh_catalog)(label, [(c.kind, c.key) for c in batch])
            await self._fan_out(label, new, batch, position)
        log.info("changes %s: %d notifications queued for %d listeners in %.1f ms", [c.id for c in batch],
                 self.delivered - delivered_before, len(self.listeners),
                 (time.perf_counter() - started) * 1000)

    def _announce(self, label: str, new: Catalog, batch: list[Change], position: int) -> None:
        """Judge `label`'s listeners on the catalog they were last served against `new`."""
        for _listener in self._offers(label, new, batch, position):
            pass

    async def _fan_out(self, label: str, new: Catalog, batch: list[Change], position: int) -> None:
        """`_announce`, yielding to the event loop every FANOUT_SLICE listeners, so the loop also
        answers requests (the publishing one first of all) and flushes the first streams' writes
        while a large fan-out is still being queued."""
        for index, _listener in enumerate(self._offers(label, new, batch, position), start=1):
            if index % FANOUT_SLICE == 0:
                await asyncio.sleep(0)

    def _offers(self, label: str, new: Catalog, batch: list[Change], position: int) -> Iterator[Listener]:
        """Offer each of `label`'s listeners what it should hear of `batch`; yields after each one.

        Judged on what the label's listeners were last told (`Told`) against `new` over the
        batch's keys; those keys of the record then advance to `new`, and no others."""
        told = self.told.get(label)
        if told is None:
            return  # no listener of this label was ever here: nothing to judge
        diff = diff_catalogs(told, new, batch)
        touched = touched_keys(batch)
        before = told.copy(touched)  # dynamic resources judge visibility before and after
        told.advance(new, touched)
        # Listeners that want the same things judge alike: decide once per kind of listener.
        decided: dict[tuple, list[Note]] = {}
        # And hear alike: each notification is built once per shape of stream (notify/frames.py).
        cache = FrameCache(position)
        for listener in [each for each in self.listeners if each.viewer.label == label]:
            interest = (listener.viewer, listener.prompts, listener.resources, frozenset(listener.uris))
            notes = decided.get(interest)
            if notes is None:
                notes = [] if diff.empty() else notifications_for(listener, diff, new)
                notes += [(RESOURCE_UPDATED, {"uri": uri})
                          for uri in dynamic_updates(listener, before, new, batch)]
                decided[interest] = notes
            if notes:
                shape = listener.shape
                if shape is None:  # a listener rendering its own frames
                    for method, params in notes:
                        frame = listener.render(method, params)
                        listener.offer((frame, str(position)) if listener.event_ids else frame)
                else:
                    tag = listener.tag
                    for shared in cache.frames(notes, shape):
                        listener.offer(shared if tag is None else finish(shared, tag))
                self.delivered += len(notes)
            yield listener

    def _held(self, kind: str, key: str) -> bool:
        """Whether a change of (kind, key) is committed and its own delivery is still to come here:
        held until its request has been answered, or claimed and queued behind the delivery or
        check that holds the lock (an overloaded worker: a 30-minute soak at load 5-11 logged 14
        "disagreed" warnings and 45 empty deliveries, the check announcing queued changes early).
        A check must not take either for a lost change."""
        pending = (*self.held_changes.values(), *self.queued.values())
        return any(c.kind == kind and c.key in (key, "*") for c in pending)

    async def check_consistency(self) -> int:
        """Compare every cached catalog with what the database serves; rebuild (and announce)
        the entries that disagree. Returns how many entries were stale.

        Nothing should ever be stale: this is the net under the change log (a gap given up on,
        a transaction still open past the gap bound, a refresh that failed half-way)."""
        assert self.lock is not None
        stale_total = 0
        async with self.lock:
            for label in sorted({each.viewer.label for each in self.listeners} | set(self.told)):
                served = await database_sync_to_async(served_fingerprint)(label)
                current = cached_catalog(label) or await database_sync_to_async(refresh_catalog)(label, [])
                # Both the catalog served from and what listeners were last told must agree.
                told = self.told.get(label)
                stale = [key for key in repairs(sorted(set(stale_keys(current, served))
                                                       | set(stale_keys(told, served) if told else ())
                                                       | set(parts_behind(told, current) if told else ())))
                         if not self._held(*key)]
                if not stale:
                    continue
                stale_total += len(stale)
                log.warning("catalog of label %r disagreed with the database on %d entries (e.g. %s); "
                            "rebuilt", label, len(stale), stale[:5])
                await self._refresh_session_subscriptions()
                bump_generation()
                new = await database_sync_to_async(refresh_catalog)(label, stale)
                # A stale snippet row changes what its followers serve: announce those entries.
                names = {key for kind, key in stale if kind == "snippet"}
                keys = dict.fromkeys([*stale, *(followers([current, new, *([told] if told else [])], names)
                                                if names else [])])
                batch = [Change(0, kind, key, label, True) for kind, key in keys if kind != "snippet"]
                await self._fan_out(label, new, batch, self.ids.floor)
        self.rebuilt += stale_total
        return stale_total


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


hub = Hub()
