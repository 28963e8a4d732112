"""Resuming a 2025 GET stream from ``Last-Event-ID``.

Events on legacy GET streams carry the sending process's change-log position as their SSE
id: every change-log id at or below it had been applied when the event was sent. Change-log
ids are shared by every worker, so a client whose stream broke (a worker restarted, a proxy
dropped it) reconnects anywhere with ``Last-Event-ID`` and gets what changed since then *for
its session*: one ``list_changed`` per kind whose entries it can see, one ``updated`` per
subscribed URI whose content may have changed, judged against the current catalog.

When the position cannot be trusted (not a number, older than the change log's retention,
newer than any change, or more than ``REPLAY_LIMIT`` rows behind), the replay is the safe
over-approximation: ``list_changed`` for both kinds and ``updated`` for every subscribed URI.
A replay may repeat a notification the client already had (all of them are idempotent
"re-read" signals); it never leaves one out.

2026-07-28 ``subscriptions/listen`` streams have no resumption (the revision does not support
``Last-Event-ID``): those clients re-read what they care about when they listen again.
"""

from __future__ import annotations

from typing import Any

from channels.db import database_sync_to_async

from ..settings import mcp_settings
from ..wire import jsonrpc
from .diff import PROMPTS_CHANGED, RESOURCE_UPDATED, RESOURCES_CHANGED, Note
from .reads import (
    PRODUCTION,
    Viewer,
    affected_uris,
    catalog_for,
    change_log_bounds,
    change_rows_after,
    may_differ_by_client,
    served_item,
    visible,
)

PRIMING_VERSIONS = ("2025-11-25",)  # revisions that define the id-only priming event


def everything(uris: set[str]) -> list[Note]:
    """The safe over-approximation: re-read both lists and every subscribed resource."""
    return [(PROMPTS_CHANGED, None), (RESOURCES_CHANGED, None)] + [
        (RESOURCE_UPDATED, {"uri": uri}) for uri in sorted(uris)]


def changed_since(last_event_id: str, viewer: Viewer, uris: set[str]) -> list[Note]:
    """What a session with ``viewer`` and subscriptions ``uris`` may have missed since the
    stream position ``last_event_id`` (sync: reads the change log and the label's catalog)."""
    try:
        after = int(last_event_id.strip())
    except (ValueError, AttributeError):
        return everything(uris)
    oldest, newest = change_log_bounds()
    if after < 0 or (oldest is None and after > 0) or (
            oldest is not None and newest is not None and (after < oldest - 1 or after > newest)):
        return everything(uris)  # pruned past it, or not a position of this registry
    limit = int(mcp_settings.REPLAY_LIMIT)
    rows = change_rows_after(after, limit + 1)
    if len(rows) > limit:
        return everything(uris)
    catalog = catalog_for(viewer.label)
    templates = {t.uri_template: t for t in catalog.template_items}
    prompts = resources = False
    updated: dict[str, None] = {}
    dynamic_uris = {uri for uri in uris if uri not in catalog.resource_items}
    for kind, key, label, list_changed in rows:
        for uri in affected_uris(dynamic_uris, kind, key):
            if key == "*" or _maybe_seen(catalog, viewer, kind, key):
                updated[uri] = None  # a computed resource reports every label's changes
        if label and label not in (viewer.label, PRODUCTION):
            continue  # another label moved; this viewer is not served from it
        if kind == "prompt":
            prompts = prompts or _maybe_served(catalog.prompt_items.get(key), viewer)
        elif kind == "resource":
            if not _maybe_served(catalog.resource_items.get(key), viewer):
                continue
            resources = resources or list_changed
            for uri in (sorted(uris) if key == "*" else [key] if key in uris else []):
                updated[uri] = None
        elif kind == "template":
            template = templates.get(key)
            if not _maybe_served(template, viewer):
                continue
            resources = True
            for uri in sorted(uris):
                if uri in catalog.resource_items:
                    continue  # a direct resource wins over any template
                if key == "*" or template is None or _matches(template, uri):
                    updated[uri] = None
    notes: list[Note] = []
    if prompts:
        notes.append((PROMPTS_CHANGED, None))
    if resources:
        notes.append((RESOURCES_CHANGED, None))
    notes.extend((RESOURCE_UPDATED, {"uri": uri}) for uri in updated)
    return notes


def _maybe_served(item: Any, viewer: Viewer) -> bool:
    """Whether a change of this entry may concern the viewer: gone since (so perhaps served before),
    served now, or running a rollout the viewer could be served either side of."""
    return item is None or served_item(item, viewer) is not None or may_differ_by_client(item, viewer)


def _maybe_seen(catalog: Any, viewer: Viewer, kind: str, key: str) -> bool:
    """Whether the viewer may have seen a change of (kind, key): an entry gone since counts (a replay
    may repeat a notification, never leave one out)."""
    present = {"prompt": catalog.prompt_items, "resource": catalog.resource_items}.get(kind)
    if present is not None and key not in present:
        return True
    if kind == "template" and all(t.uri_template != key for t in catalog.template_items):
        return True
    return visible(catalog, viewer, kind, key)


def _matches(template: Any, uri: str) -> bool:
    try:
        return template.matcher.match(uri) is not None
    except Exception:  # an unsafe URI never matches
        return False


async def opening_frames(listener: Any, last_event_id: str | None, protocol_version: str,
                         position: int) -> list[tuple[bytes, str]]:
    """The frames a legacy GET stream opens with: the replay after ``Last-Event-ID`` (each
    with the current position as its id), else, where the revision defines it, an id-only
    priming event so that even a quiet stream can be resumed."""
    event_id = str(position)
    if last_event_id is not None:
        notes = await database_sync_to_async(changed_since)(last_event_id, listener.viewer,
                                                            set(listener.uris))
        if notes:
            return [(jsonrpc.encode_notification(method, params), event_id) for method, params in notes]
    if protocol_version in PRIMING_VERSIONS:
        return [(b"", event_id)]
    return []
