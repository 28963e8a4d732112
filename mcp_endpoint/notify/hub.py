"""Per-process notification hub: registry changes in, per-listener MCP notifications out.

Changes reach a process three ways, and each change-log id is handled once whichever way
arrives first:
  1. this process committed it (``registry_changed`` after commit), delivered at once;
  2. another process committed it and sent it over the channel layer (Redis when scaled out);
  3. the catch-up poller reads the change log every POLL_SECONDS, so a change made while the
     channel layer was down, or by a process with no layer at all (a management command on
     the embedded default), still arrives. It asks for every id it has not applied, not just
     those after the newest (see applied.py: ids are not commit order), and a periodic
     consistency check rebuilds any catalog entry that disagrees with the database anyway.

For every batch the hub rebuilds the catalog of each label its listeners are bound to and
compares it with the catalog it last judged them against: a listener hears about a change
only if what *it* is served (its label, its scope, its subscribed URIs) actually changed.
Listeners are queues drained by their own stream loop, so a slow or stuck client never delays
the others; a queue that overflows closes that one stream. On daphne the hub writes a frame to
an idle stream itself, and a client whose connection Twisted reports backed up is cut off
(mcp_endpoint/daphne_server.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections import Counter, OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from registry import changes as registry_changes
from registry import dynamic, warmup
from registry.catalog import Catalog, Viewer, cached_catalog, forget_catalogs, held_labels, refresh_catalog
from registry.changes import Change, ChangeBatch
from registry.consistency import served_fingerprint, stale_keys
from registry.viewer import served_item

from ..settings import mcp_settings
from . import layer_health
from .applied import AppliedIds
from .mailbox import Mailbox

log = logging.getLogger(__name__)

def changes_group() -> str:
    """The channel-layer group of this registry's change events.

    Named after the database, so two registries sharing one Redis never take each other's
    change ids for their own (which would mark a real change as already seen).
    """
    import hashlib

    from django.conf import settings

    db = settings.DATABASES["default"]
    identity = "|".join(str(db.get(k, "")) for k in ("ENGINE", "NAME", "HOST", "PORT"))
    return "mcp.registry-changes." + hashlib.sha256(identity.encode()).hexdigest()[:20]


class StreamLimitReached(Exception):
    """Too many open notification streams (per process or per client)."""


def session_group(session_id: str) -> str:
    """Channel-layer group of one legacy session's streams (any process)."""
    import hashlib

    return "mcp.session." + hashlib.sha256(session_id.encode()).hexdigest()[:24]
PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"
RESOURCE_UPDATED = "notifications/resources/updated"
CLOSE = None  # queue sentinel: the server ends the stream for good (a listen sends its result)


class _Drop:
    """Queue sentinel: end the stream without a final message (restart, cancellation, overflow),
    so the client treats it as a disconnect and reconnects."""

    def __repr__(self) -> str:
        return "DROP"


DROP = _Drop()
INITIAL_WINDOW = 2000  # ids below the newest at start that may still be in flight
FANOUT_SLICE = 50  # listeners offered a change between two yields to the event loop


@dataclass(eq=False)
class Listener:
    """One open stream's interest: what it wants to hear and where frames go."""

    viewer: Viewer
    render: Callable[[str, dict[str, Any] | None], bytes]
    prompts: bool = True
    resources: bool = True
    uris: set[str] = field(default_factory=set)
    session_id: str | None = None  # legacy GET streams: one delivering stream per session
    owner: Any = None  # whose stream budget it uses (client token, or the anonymous peer address)
    request_id: Any = None  # a listen stream's request id, so its owner can cancel it
    event_ids: bool = False  # frames carry the change-log position (legacy GET resumption)
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


def _list_identity(item: Any) -> dict[str, Any]:
    """What resources/list shows of a resource, less what any content edit changes (size, date)."""
    listing = {k: v for k, v in item.listing.items() if k != "size"}
    annotations = {k: v for k, v in (listing.get("annotations") or {}).items() if k != "lastModified"}
    listing["annotations"] = annotations
    return listing


def _state(item: Any) -> tuple | None:
    if item is None:
        return None
    rollout = getattr(item, "rollout", None)
    running = (rollout.percent, rollout.candidate.version) if rollout is not None else None
    return (item.version, item.label, item.tags, running)


def _served_changed(old: Any, new: Any, viewer: Viewer) -> tuple[Any, Any] | None:
    """(old, new) served items if what this viewer receives differs, else None (served_item: the
    version a viewer gets, rollouts and the served version's own tags included)."""
    before, after = served_item(old, viewer), served_item(new, viewer)
    if (before is None and after is None) or (
        before is not None and after is not None and before.version == after.version and before.tags == after.tags
    ):
        return None
    return before, after


_KINDS = ("prompt", "resource", "template")


class Told:
    """What a label's listeners were last judged against, entry by entry: the hub's own record.

    A delivery diffs it against the refreshed catalog over the batch's keys and then advances
    exactly those keys, never the rest. The process's catalog may have been moved on by a
    rebuild (a list request after another commit) to include a later change; that change's own
    delivery still finds its key as listeners last heard of it, so nothing is swallowed
    whatever order rebuilds, refreshes and deliveries run in. The consistency check compares
    this record, not only the catalog, with what the database serves."""

    def __init__(self, label: str, prompts: dict[str, Any], resources: dict[str, Any],
                 templates: dict[str, Any]) -> None:
        self.label = label
        self.prompt_items = prompts
        self.resource_items = resources
        self.templates = templates

    @classmethod
    def of(cls, catalog: Any) -> Told:
        return cls(catalog.label, dict(catalog.prompt_items), dict(catalog.resource_items),
                   {t.uri_template: t for t in catalog.template_items})

    @property
    def template_items(self) -> list[Any]:
        return [self.templates[key] for key in sorted(self.templates)]

    def pool(self, kind: str) -> dict[str, Any]:
        return {"prompt": self.prompt_items, "resource": self.resource_items, "template": self.templates}[kind]

    def copy(self, touched: dict[str, dict[str, None] | None]) -> Told:
        """A record of just the touched keys (every key of a kind touched as a whole), as they are now."""
        parts: dict[str, dict[str, Any]] = {kind: {} for kind in _KINDS}
        for kind, keys in touched.items():
            pool = self.pool(kind)
            parts[kind] = dict(pool) if keys is None else {key: pool[key] for key in keys if key in pool}
        return Told(self.label, parts["prompt"], parts["resource"], parts["template"])

    def advance(self, new: Any, touched: dict[str, dict[str, None] | None]) -> None:
        """Take `new`'s items for the touched keys of each kind (None: every key of that kind)."""
        fresh = {"prompt": new.prompt_items, "resource": new.resource_items,
                 "template": {t.uri_template: t for t in new.template_items} if "template" in touched else {}}
        for kind, keys in touched.items():
            pool, source = self.pool(kind), fresh[kind]
            if keys is None:
                pool.clear()
                pool.update(source)
                continue
            for key in keys:
                if key in source:
                    pool[key] = source[key]
                else:
                    pool.pop(key, None)


def _pools(record: Any) -> dict[str, dict[str, Any]]:
    if isinstance(record, Told):
        return {"prompt": record.prompt_items, "resource": record.resource_items, "template": record.templates}
    return {"prompt": record.prompt_items, "resource": record.resource_items,
            "template": {t.uri_template: t for t in record.template_items}}


def touched_keys(batch: Iterable[Change]) -> dict[str, dict[str, None] | None]:
    """Per kind, the keys a batch touches in batch order; None where a bulk change ("*") touches
    every key of the kind."""
    out: dict[str, dict[str, None] | None] = {}
    for change in batch:
        if change.kind not in _KINDS:
            continue
        if change.key == "*":
            out[change.kind] = None
            continue
        keys = out.setdefault(change.kind, {})
        if keys is not None:
            keys[change.key] = None
    return out


@dataclass
class LabelDiff:
    """What changed for one label between what listeners were told and the catalog, over a batch's keys."""

    prompts: list[tuple[Any, Any]] = field(default_factory=list)     # (old, new) prompt items
    resources: list[tuple[Any, Any]] = field(default_factory=list)   # (old, new) resource items
    templates: list[tuple[Any, Any]] = field(default_factory=list)   # (old, new) template items

    def empty(self) -> bool:
        return not (self.prompts or self.resources or self.templates)


def diff_catalogs(old: Any, new: Any, batch: Iterable[Change]) -> LabelDiff:
    """`old` (what listeners were told: a Told, or a catalog) against `new`, over the keys of `batch`."""
    diff = LabelDiff()
    before = _pools(old) if old is not None else {kind: {} for kind in _KINDS}
    after = _pools(new)
    targets = {"prompt": diff.prompts, "resource": diff.resources, "template": diff.templates}
    for kind, keys in touched_keys(batch).items():
        for key in (sorted(set(before[kind]) | set(after[kind])) if keys is None else keys):
            pair = (before[kind].get(key), after[kind].get(key))
            if _state(pair[0]) != _state(pair[1]):
                targets[kind].append(pair)
    return diff


def notifications_for(listener: Listener, diff: LabelDiff, new: Catalog) -> list[tuple[str, dict[str, Any] | None]]:
    """The notifications one listener should get for one label's diff (deduplicated).

    Judged on what this listener's viewer is served: entries outside its scope, and rollout
    changes that leave its bucket on the same version, announce nothing to it."""
    viewer = listener.viewer
    out: list[tuple[str, dict[str, Any] | None]] = []
    if listener.prompts and any(_served_changed(o, n, viewer) for o, n in diff.prompts):
        out.append((PROMPTS_CHANGED, None))
    listed = False
    updated: dict[str, None] = {}
    for old, new_item in diff.resources:
        changed = _served_changed(old, new_item, viewer)
        if changed is None:
            continue
        before, after = changed
        if before is None or after is None or _list_identity(before) != _list_identity(after):
            listed = True
        uri = (new_item or old).uri
        if uri in listener.uris:
            updated[uri] = None
    for old, new_item in diff.templates:
        changed = _served_changed(old, new_item, viewer)
        if changed is None:
            continue
        listed = True
        for uri in listener.uris:
            if uri in new.resource_items:
                continue  # a direct resource wins over any template
            for item in changed:
                try:
                    if item is not None and item.matcher.match(uri) is not None:
                        updated[uri] = None
                        break
                except Exception:  # an unsafe URI never matches
                    continue
    if listed and listener.resources:
        out.append((RESOURCES_CHANGED, None))
    out.extend((RESOURCE_UPDATED, {"uri": uri}) for uri in updated)
    return out


def dynamic_updates(listener: Listener, old: Catalog | None, new: Catalog, batch: Iterable[Change]) -> list[str]:
    """Subscribed URIs of built-in dynamic resources (registry/dynamic.py) that a batch alters.

    A change counts when its kind is one the provider depends on, the provider says it alters
    the subscribed URI (a changelog cares about its own prompt only), and this listener may see
    the changed entry before or after: a change outside its scope is not in what it reads."""
    viewer = listener.viewer
    wanted = {uri for uri in listener.uris if uri not in new.resource_items}  # a stored resource wins
    updated: dict[str, None] = {}
    for change in batch:
        if not wanted:
            break
        uris = dynamic.affected_uris(wanted, change.kind, change.key)
        if uris and (change.key == "*" or any(catalog is not None and dynamic.visible(catalog, viewer, change.kind,
                                                                                    change.key)
                                              for catalog in (old, new))):
            updated.update(dict.fromkeys(uris))
            wanted.difference_update(uris)
    return list(updated)


class Hub:
    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self.budgets: Counter[Any] = Counter()  # open streams per budget key, kept by _add/_remove
        self.held: set[int] = set()  # change ids committed by a request still being answered here
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
        top, present = await database_sync_to_async(_recent_ids)(INITIAL_WINDOW)
        # What was committed before this process listened is not news; ids missing just below
        # the newest may be transactions still open, so they are watched as gaps.
        ids = AppliedIds(max(0, top - INITIAL_WINDOW))
        ids.seed(present, top)
        self.ids = ids
        tasks = [loop.create_task(self._poll_forever(), name="mcp-hub-poller", context=contextvars.Context())]
        layer = _layer()
        if layer is not None and not _in_memory(layer):
            layer_health.install_filter()
            tasks.append(loop.create_task(self._read_layer(layer), name="mcp-hub-layer", context=contextvars.Context()))
            tasks.append(loop.create_task(self._watch_layer(layer), name="mcp-hub-layer-health",
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
            raise StreamLimitReached(f"this server holds its limit of {mcp_settings.MAX_STREAMS} open streams")
        if self.count_for(self.budget_key(listener)) >= int(mcp_settings.MAX_STREAMS_PER_CLIENT):
            raise StreamLimitReached(
                f"a client may hold at most {mcp_settings.MAX_STREAMS_PER_CLIENT} open streams; close some first")
        await self.start()
        label = listener.viewer.label
        if label not in self.told:
            # Built in the background (registry/warmup.py), so list pages read meanwhile are not
            # queued behind the build in the database executor. Kept (and advanced by every
            # delivery) from now on, so later listeners of the label are judged on the same record.
            catalog = await asyncio.shield(asyncio.wrap_future(warmup.warm(label)))
            self.told.setdefault(label, Told.of(catalog))
        if listener.session_id is not None:  # one delivering GET stream per legacy session
            for other in [l for l in self.listeners if l.session_id == listener.session_id]:
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
        for listener in [l for l in self.listeners
                         if l.request_id is not None and l.owner == owner and l.request_id == request_id
                         and type(l.request_id) is type(request_id)]:
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
        layer = _layer()
        if layer is not None and not _in_memory(layer):
            try:
                await layer.group_send(session_group(session_id), {"type": "mcp.subscriptions", "uris": uris})
            except Exception:
                layer_health.health.failure(log, "could not share session subscriptions over the channel layer")

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
            loop.call_later(seconds, lambda: self.submit_threadsafe(changes, release=True))

        loop.call_soon_threadsafe(hold, context=contextvars.Context())

    async def process(self, batch: list[Change]) -> None:
        if self.held:
            batch = [c for c in batch if c.id not in self.held]
        claimed = set(self.ids.claim(c.id for c in batch))
        if not claimed:
            return
        fresh = list({c.id: c for c in batch if c.id in claimed}.values())
        registry_changes.bump_generation()  # perhaps committed elsewhere: retire cached catalogs
        assert self.lock is not None
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
        self.ids.done(claimed)

    async def _refresh_session_subscriptions(self) -> None:
        """Re-read the subscriptions of this process's legacy GET streams from their rows.

        A ``resources/subscribe`` served by another worker reaches this one over the channel
        layer; when that is down, this read (before every delivery) still picks it up."""
        sessions = {l.session_id for l in self.listeners if l.session_id is not None}
        if not sessions:
            return
        stored = await database_sync_to_async(_stored_subscriptions)(sorted(sessions))
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
        labels = {l.viewer.label for l in self.listeners} | set(self.told) | held_labels()
        for label in sorted(labels):
            new = await database_sync_to_async(refresh_catalog)(label, [(c.kind, c.key) for c in batch])
            await self._fan_out(label, new, batch, position)
        log.info("changes %s: %d notifications queued for %d listeners in %.1f ms", [c.id for c in batch],
                 self.delivered - delivered_before, len(self.listeners), (time.perf_counter() - started) * 1000)

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
        decided: dict[tuple, list[tuple[str, dict[str, Any] | None]]] = {}
        for listener in [l for l in self.listeners if l.viewer.label == label]:
            interest = (listener.viewer, listener.prompts, listener.resources, frozenset(listener.uris))
            notes = decided.get(interest)
            if notes is None:
                notes = [] if diff.empty() else notifications_for(listener, diff, new)
                notes += [(RESOURCE_UPDATED, {"uri": uri}) for uri in dynamic_updates(listener, before, new, batch)]
                decided[interest] = notes
            for method, params in notes:
                frame = listener.render(method, params)
                listener.offer((frame, str(position)) if listener.event_ids else frame)
                self.delivered += 1
            yield listener

    async def check_consistency(self) -> int:
        """Compare every cached catalog with what the database serves; rebuild (and announce)
        the entries that disagree. Returns how many entries were stale.

        Nothing should ever be stale: this is the net under the change log (a gap given up on,
        a transaction still open past the gap bound, a refresh that failed half-way)."""
        assert self.lock is not None
        stale_total = 0
        async with self.lock:
            for label in sorted({l.viewer.label for l in self.listeners} | set(self.told)):
                served = await database_sync_to_async(served_fingerprint)(label)
                current = cached_catalog(label) or await database_sync_to_async(refresh_catalog)(label, [])
                # Both the catalog served from and what listeners were last told must agree.
                told = self.told.get(label)
                stale = sorted(set(stale_keys(current, served)) | set(stale_keys(told, served) if told else ()))
                if not stale:
                    continue
                stale_total += len(stale)
                log.warning("catalog of label %r disagreed with the database on %d entries (e.g. %s); rebuilt",
                            label, len(stale), stale[:5])
                await self._refresh_session_subscriptions()
                registry_changes.bump_generation()
                new = await database_sync_to_async(refresh_catalog)(label, stale)
                batch = [Change(0, kind, key, label, True) for kind, key in stale]
                await self._fan_out(label, new, batch, self.ids.floor)
        self.rebuilt += stale_total
        return stale_total

    async def poll_once(self) -> None:
        """One catch-up tick: read what this process has not applied, deliver it, give up on
        gaps older than the bound, and check the catalogs when that is due (or in doubt)."""
        # Everything after the newest id applied, plus every id still missing below it:
        # a long transaction commits its low ids after shorter ones with higher ids.
        rows = await database_sync_to_async(_changes_wanted)(self.ids.top, sorted(self.ids.gaps))
        missed = [c for c in rows if self.ids.is_new(c.id)]
        if missed:
            await self.process(missed)
        given_up = self.ids.expire(float(mcp_settings.CHANGE_GAP_SECONDS))
        now = time.monotonic()
        if given_up:  # a rolled-back id, or a transaction open for longer than the bound
            log.info("change-log ids %s never committed within %s s; checking the catalogs",
                     given_up[:10], mcp_settings.CHANGE_GAP_SECONDS)
        doubt = self.ids.take_doubt()
        if given_up or doubt or now - self.last_check > float(mcp_settings.CONSISTENCY_CHECK_SECONDS):
            self.last_check = now
            await self.check_consistency()

    async def _poll_forever(self) -> None:
        interval = float(mcp_settings.CHANGE_POLL_SECONDS)
        last_prune = self.last_check = time.monotonic()
        failing_since: float | None = None
        last_report = 0.0
        while True:
            await asyncio.sleep(interval)
            try:
                await self.poll_once()
                if time.monotonic() - last_prune > 600:
                    last_prune = time.monotonic()
                    await database_sync_to_async(prune_change_log)()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database may be briefly unavailable; try again next tick
                now = time.monotonic()
                if failing_since is None:
                    failing_since = last_report = now
                    log.warning("change-log catch-up failed; retrying every %s s", interval, exc_info=True)
                elif now - last_report >= 30:
                    last_report = now
                    log.warning("change-log catch-up still failing after %d s", now - failing_since)
            else:
                if failing_since is not None:
                    log.warning("change-log catch-up works again after %d s", time.monotonic() - failing_since)
                failing_since = None

    async def _read_layer(self, layer: Any) -> None:
        while True:
            try:
                channel = await layer.new_channel("mcp.hub!")
                await layer.group_add(changes_group(), channel)
                while True:
                    event = await layer.receive(channel)
                    if event.get("type") == "registry.changed":
                        await self.process([Change(*row) for row in event["changes"]])
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis down: the poller keeps changes flowing; reconnect shortly
                layer_health.health.failure(log, "channel layer unavailable")
                await asyncio.sleep(1.0)

    async def _watch_layer(self, layer: Any) -> None:
        """Probe the layer (one publish nobody listens to) to log an outage's start, a summary
        while it lasts and its end: one line each, not a traceback per second."""
        probe = changes_group() + ".probe"
        while True:
            try:
                await asyncio.wait_for(layer.group_send(probe, {"type": "mcp.probe"}), 5.0)
            except asyncio.CancelledError:
                raise
            except Exception:
                layer_health.health.probe_failed()
            else:
                layer_health.health.probe_ok()
            await asyncio.sleep(1.0 if layer_health.health.down else 5.0)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _layer() -> Any:
    try:
        from channels.layers import get_channel_layer

        return get_channel_layer()
    except Exception:
        log.exception("channel layer misconfigured")
        return None


def _in_memory(layer: Any) -> bool:
    from channels.layers import InMemoryChannelLayer

    return isinstance(layer, InMemoryChannelLayer)


def _recent_ids(window: int) -> tuple[int, list[int]]:
    """The newest change-log id and the ids present in the ``window`` below it."""
    from registry.models import ChangeLogEntry

    top = ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
    present = list(ChangeLogEntry.objects.filter(id__gt=top - window).values_list("id", flat=True))
    return top, present


def _row(r: Any) -> Change:
    return Change(r.id, r.entry_kind, r.entry_key, r.label, r.list_changed)


def _changes_after(after_id: int) -> list[Change]:
    from registry.models import ChangeLogEntry

    rows = ChangeLogEntry.objects.filter(id__gt=after_id).order_by("id")[:5000]
    return [_row(r) for r in rows]


def _changes_wanted(after_id: int, gaps: list[int]) -> list[Change]:
    """Rows after ``after_id`` (at most 5,000 per call) and the rows of any ``gaps`` now present."""
    from registry.models import ChangeLogEntry

    found = _changes_after(after_id)
    for start in range(0, len(gaps), 500):
        found.extend(_row(r) for r in ChangeLogEntry.objects.filter(id__in=gaps[start:start + 500]))
    return sorted(found, key=lambda c: c.id)


def _stored_subscriptions(session_ids: list[str]) -> dict[str, list[str]]:
    from ..models import McpSession

    out: dict[str, list[str]] = {}
    for start in range(0, len(session_ids), 500):
        rows = McpSession.objects.filter(pk__in=session_ids[start:start + 500]).values_list("pk", "subscriptions")
        out.update((pk, list(subs or ())) for pk, subs in rows)
    return out


def prune_change_log() -> int:
    from datetime import timedelta

    from django.utils import timezone

    from registry.models import ChangeLogEntry

    cutoff = timezone.now() - timedelta(seconds=float(mcp_settings.CHANGE_LOG_RETENTION_SECONDS))
    deleted, _ = ChangeLogEntry.objects.filter(created_at__lt=cutoff).delete()
    return deleted


hub = Hub()


def forward_registry_changes(sender: Any, batch: ChangeBatch, **kwargs: Any) -> None:
    """``registry_changed`` receiver: this process committed `batch`; tell every listener."""
    from .handoff import hand_to_hub

    rows = [[c.id, c.kind, c.key, c.label, c.list_changed] for c in batch.changes]
    hand_to_hub(list(batch.changes))  # at the end of the committing request, if there is one
    layer = _layer()
    if layer is None or _in_memory(layer):
        return  # single process: the hub above is everyone
    event = {"type": "registry.changed", "changes": rows}
    loop = _running_loop()
    if loop is not None:
        loop.create_task(_publish(layer, event))
    elif hub.loop is not None and hub.loop.is_running():
        # The committing request's thread hands the send to the hub's loop and returns at once:
        # waiting for Redis (and for a loop busy fanning out) would add to its latency.
        hub.loop.call_soon_threadsafe(lambda: hub.loop.create_task(_publish(layer, event)),
                                      context=contextvars.Context())
    else:  # no serving loop in this process (a management command): send before returning
        async_to_sync(_publish)(layer, event)


async def _publish(layer: Any, event: dict[str, Any]) -> None:
    try:
        await layer.group_send(changes_group(), event)
    except Exception:  # the other workers' pollers will catch up from the change log
        layer_health.health.failure(log, "could not publish registry change on the channel layer")
