"""Per-process notification hub: registry changes in, per-listener MCP notifications out.

Changes reach a process three ways, and each change-log id is handled once whichever way
arrives first:
  1. this process committed it (``registry_changed`` after commit), delivered at once;
  2. another process committed it and sent it over the channel layer (Redis when scaled out);
  3. the catch-up poller reads the change log every POLL_SECONDS, so a change made while the
     channel layer was down, or by a process with no layer at all (a management command on
     the embedded default), still arrives.

For every batch the hub rebuilds the catalog of each label its listeners are bound to and
compares it with the catalog it last judged them against: a listener hears about a change
only if what *it* is served (its label, its scope, its subscribed URIs) actually changed.
Listeners are asyncio queues drained by their own stream loop, so a slow or stuck client
never delays the others; a queue that overflows closes that one stream.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async

from registry import changes as registry_changes
from registry.catalog import Catalog, Viewer, forget_catalogs, load_catalog, refresh_catalog
from registry.changes import Change, ChangeBatch
from registry.rollouts import gets_candidate

from .settings import mcp_settings

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
CLOSE = None  # queue sentinel: the server ends the stream


@dataclass(eq=False)
class Listener:
    """One open stream's interest: what it wants to hear and where frames go."""

    viewer: Viewer
    render: Callable[[str, dict[str, Any] | None], bytes]
    prompts: bool = True
    resources: bool = True
    uris: set[str] = field(default_factory=set)
    session_id: str | None = None  # legacy GET streams: one delivering stream per session
    queue: asyncio.Queue = field(default_factory=lambda: asyncio.Queue(mcp_settings.LISTENER_QUEUE_SIZE))
    overflowed: bool = False
    opened_at: float = field(default_factory=time.monotonic)

    def offer(self, frame: bytes | None) -> None:
        if self.overflowed:
            return
        try:
            self.queue.put_nowait(frame)
        except asyncio.QueueFull:  # the client stopped reading: end its stream, spare the rest
            self.overflowed = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(CLOSE)


def _visible(item: Any, viewer: Viewer) -> bool:
    return item is not None and viewer.sees(item.tags)


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


def _served(item: Any, viewer: Viewer) -> Any:
    """The item this viewer is actually served (a rollout may hand it the candidate), or None."""
    if item is None or not viewer.sees(item.tags):
        return None
    rollout = getattr(item, "rollout", None)
    if rollout is not None and gets_candidate(viewer.client_name, item.key, rollout.percent):
        return rollout.candidate
    return item


def _served_changed(old: Any, new: Any, viewer: Viewer) -> tuple[Any, Any] | None:
    """(old, new) served items if what this viewer receives differs, else None."""
    before, after = _served(old, viewer), _served(new, viewer)
    if (before is None and after is None) or (
        before is not None and after is not None and before.version == after.version and before.tags == after.tags
    ):
        return None
    return before, after


@dataclass
class LabelDiff:
    """What changed for one label between two catalogs, restricted to the batch's keys."""

    prompts: list[tuple[Any, Any]] = field(default_factory=list)     # (old, new) prompt items
    resources: list[tuple[Any, Any]] = field(default_factory=list)   # (old, new) resource items
    templates: list[tuple[Any, Any]] = field(default_factory=list)   # (old, new) template items

    def empty(self) -> bool:
        return not (self.prompts or self.resources or self.templates)


def _keys(change: Change, old: Catalog | None, new: Catalog) -> Iterable[str]:
    """The keys a change touches; "*" (a bulk load) touches every key of its kind."""
    if change.key != "*":
        return (change.key,)
    if change.kind == "prompt":
        return set(new.prompt_items) | set(old.prompt_items if old else ())
    if change.kind == "resource":
        return set(new.resource_items) | set(old.resource_items if old else ())
    return {t.uri_template for t in new.template_items} | {t.uri_template for t in (old.template_items if old else ())}


def diff_catalogs(old: Catalog | None, new: Catalog, batch: Iterable[Change]) -> LabelDiff:
    diff = LabelDiff()
    old_templates = {t.uri_template: t for t in old.template_items} if old else {}
    new_templates = {t.uri_template: t for t in new.template_items}
    done: set[tuple[str, str]] = set()
    for change in batch:
        for key in _keys(change, old, new):
            if (change.kind, key) in done:
                continue
            done.add((change.kind, key))
            if change.kind == "prompt":
                pair = (old.prompt_items.get(key) if old else None, new.prompt_items.get(key))
                target = diff.prompts
            elif change.kind == "resource":
                pair = (old.resource_items.get(key) if old else None, new.resource_items.get(key))
                target = diff.resources
            elif change.kind == "template":
                pair = (old_templates.get(key), new_templates.get(key))
                target = diff.templates
            else:
                continue
            if _state(pair[0]) != _state(pair[1]):
                target.append(pair)
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


class Hub:
    def __init__(self) -> None:
        self.listeners: set[Listener] = set()
        self.catalogs: dict[str, Catalog] = {}
        self.seen: OrderedDict[int, None] = OrderedDict()
        self.high_water = 0
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: list[asyncio.Task] = []
        self.lock: asyncio.Lock | None = None
        self.delivered = 0
        self.starting: asyncio.Task | None = None
        self.floor = 0

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
        self.high_water = await database_sync_to_async(_latest_change_id)()
        self.floor = self.high_water  # what was committed before this process listened is not news
        tasks = [loop.create_task(self._poll_forever(), name="mcp-hub-poller", context=contextvars.Context())]
        layer = _layer()
        if layer is not None and not _in_memory(layer):
            tasks.append(loop.create_task(self._read_layer(layer), name="mcp-hub-layer", context=contextvars.Context()))
        self.tasks = tasks

    async def stop(self) -> None:
        for task in self.tasks:
            task.cancel()
        self.tasks = []
        self.starting = None

    async def register(self, listener: Listener) -> None:
        """Add a stream's listener; raises StreamLimitReached past the configured limits."""
        if len(self.listeners) >= int(mcp_settings.MAX_STREAMS):
            raise StreamLimitReached(f"this server holds its limit of {mcp_settings.MAX_STREAMS} open streams")
        key = (listener.viewer.client_id, listener.viewer.client_name)
        if self.count_for(key) >= int(mcp_settings.MAX_STREAMS_PER_CLIENT):
            raise StreamLimitReached(
                f"a client may hold at most {mcp_settings.MAX_STREAMS_PER_CLIENT} open streams; close some first")
        await self.start()
        label = listener.viewer.label
        if label not in self.catalogs:
            self.catalogs[label] = await database_sync_to_async(load_catalog)(label)
        if listener.session_id is not None:  # one delivering GET stream per legacy session
            for other in [l for l in self.listeners if l.session_id == listener.session_id]:
                self.listeners.discard(other)
                other.offer(CLOSE)
        self.listeners.add(listener)

    def unregister(self, listener: Listener) -> None:
        self.listeners.discard(listener)

    def count_for(self, client_key: Any) -> int:
        return sum(1 for l in self.listeners if (l.viewer.client_id, l.viewer.client_name) == client_key)

    def set_session_subscriptions(self, session_id: str, uris: Iterable[str]) -> None:
        for listener in self.listeners:
            if listener.session_id == session_id:
                listener.uris = set(uris)

    async def session_subscriptions_changed(self, session_id: str, uris: Iterable[str]) -> None:
        """A legacy session (un)subscribed: update its stream here and in every other process."""
        uris = sorted(uris)
        self.set_session_subscriptions(session_id, uris)
        layer = _layer()
        if layer is not None and not _in_memory(layer):
            try:
                await layer.group_send(session_group(session_id), {"type": "mcp.subscriptions", "uris": uris})
            except Exception:
                log.warning("could not share session subscriptions over the channel layer", exc_info=True)

    def close_all(self) -> None:
        """Server shutdown: every stream ends gracefully (a listen stream sends its result)."""
        for listener in list(self.listeners):
            listener.offer(CLOSE)
        self.listeners.clear()

    # ----------------------------------------------------------- intake
    def submit_threadsafe(self, changes: list[Change]) -> None:
        """Hand committed changes to the hub from any thread (the committing request's)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return
        # A fresh context: the committing thread's context (asgiref's thread-sensitive markers
        # included) must not leak into the hub, or its database calls may refuse to run.
        if _running_loop() is loop:
            loop.create_task(self.process(changes), context=contextvars.Context())
        else:
            loop.call_soon_threadsafe(lambda: loop.create_task(self.process(changes), context=contextvars.Context()),
                                      context=contextvars.Context())

    async def process(self, batch: list[Change]) -> None:
        fresh = [c for c in batch if c.id not in self.seen]
        if not fresh:
            return
        for change in fresh:
            self.seen[change.id] = None
            self.high_water = max(self.high_water, change.id)
        while len(self.seen) > 50_000:
            self.seen.popitem(last=False)
        registry_changes.bump_generation()  # perhaps committed elsewhere: retire cached catalogs
        assert self.lock is not None
        async with self.lock:
            try:
                await self._deliver(fresh)
            except Exception:
                # E.g. the database was briefly unavailable. Serve nothing built on a partial
                # refresh, and let the catch-up poller bring these changes again.
                log.warning("could not deliver changes %s; retrying from the change log", [c.id for c in fresh],
                            exc_info=True)
                forget_catalogs()
                for change in fresh:
                    self.seen.pop(change.id, None)

    async def _deliver(self, batch: list[Change]) -> None:
        started = time.perf_counter()
        delivered_before = self.delivered
        labels = {l.viewer.label for l in self.listeners} | set(self.catalogs)
        for label in labels:
            old = self.catalogs.get(label)
            new = await database_sync_to_async(refresh_catalog)(label, [(c.kind, c.key) for c in batch])
            self.catalogs[label] = new
            diff = diff_catalogs(old, new, batch)
            if diff.empty():
                continue
            # Listeners that want the same things judge alike: decide once per kind of listener.
            decided: dict[tuple, list[tuple[str, dict[str, Any] | None]]] = {}
            for listener in [l for l in self.listeners if l.viewer.label == label]:
                interest = (listener.viewer, listener.prompts, listener.resources, frozenset(listener.uris))
                notes = decided.get(interest)
                if notes is None:
                    notes = decided[interest] = notifications_for(listener, diff, new)
                for method, params in notes:
                    listener.offer(listener.render(method, params))
                    self.delivered += 1
        log.info("changes %s: %d notifications queued for %d listeners in %.1f ms", [c.id for c in batch],
                 self.delivered - delivered_before, len(self.listeners), (time.perf_counter() - started) * 1000)

    async def _poll_forever(self) -> None:
        interval = float(mcp_settings.CHANGE_POLL_SECONDS)
        last_prune = time.monotonic()
        while True:
            await asyncio.sleep(interval)
            try:
                # Look back a little: PostgreSQL may commit a lower id after a higher one.
                rows = await database_sync_to_async(_changes_after)(max(self.floor, self.high_water - 200))
                missed = [c for c in rows if c.id not in self.seen]
                if missed:
                    await self.process(missed)
                if time.monotonic() - last_prune > 600:
                    last_prune = time.monotonic()
                    await database_sync_to_async(prune_change_log)()
            except asyncio.CancelledError:
                raise
            except Exception:  # the database may be briefly unavailable; try again next tick
                log.warning("change-log catch-up failed", exc_info=True)

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
                log.warning("channel layer unavailable; relying on change-log catch-up", exc_info=True)
                await asyncio.sleep(1.0)


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


def _latest_change_id() -> int:
    from registry.models import ChangeLogEntry

    row = ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True).first()
    return row or 0


def _changes_after(after_id: int) -> list[Change]:
    from registry.models import ChangeLogEntry

    rows = ChangeLogEntry.objects.filter(id__gt=after_id).order_by("id")[:5000]
    return [Change(r.id, r.entry_kind, r.entry_key, r.label, r.list_changed) for r in rows]


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
    rows = [[c.id, c.kind, c.key, c.label, c.list_changed] for c in batch.changes]
    hub.submit_threadsafe(list(batch.changes))
    layer = _layer()
    if layer is None or _in_memory(layer):
        return  # single process: the hub above is everyone
    event = {"type": "registry.changed", "changes": rows}
    loop = _running_loop()
    try:
        if loop is not None:
            loop.create_task(layer.group_send(changes_group(), event))
        elif hub.loop is not None and hub.loop.is_running():
            # The committing request's thread hands the send to the hub's loop and returns at
            # once: waiting for Redis (and for a loop busy fanning out) would add to its latency.
            hub.loop.call_soon_threadsafe(_send_soon, layer, event, context=contextvars.Context())
        else:  # no serving loop in this process (a management command): send before returning
            async_to_sync(layer.group_send)(changes_group(), event)
    except Exception:  # the other workers' pollers will catch up from the change log
        log.warning("could not publish registry change on the channel layer", exc_info=True)


def _send_soon(layer: Any, event: dict[str, Any]) -> None:
    async def send() -> None:
        try:
            await layer.group_send(changes_group(), event)
        except Exception:  # the other workers' pollers will catch up from the change log
            log.warning("could not publish registry change on the channel layer", exc_info=True)

    asyncio.get_running_loop().create_task(send())
