"""What a change means to each listener, decided without an event loop or a database.

The hub keeps, per label, the record of what that label's listeners were last judged against
(:class:`Told`); for a batch of changes it diffs that record against the refreshed catalog over
the batch's keys (:func:`diff_catalogs`) and asks, per listener, which notifications the diff
means to what *that listener* is served (:func:`notifications_for`; built-in dynamic resources:
:func:`dynamic_updates`). Pure functions over catalogs, records and listeners.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from .listeners import Listener
from .reads import Catalog, Change, Viewer, affected_uris, served_item, visible

PROMPTS_CHANGED = "notifications/prompts/list_changed"
RESOURCES_CHANGED = "notifications/resources/list_changed"
RESOURCE_UPDATED = "notifications/resources/updated"


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
    running = (rollout.percent, rollout.candidate.version, rollout.candidate.parts) if rollout is not None else None
    return (item.version, item.label, item.tags, running, item.parts)


def _served_changed(old: Any, new: Any, viewer: Viewer) -> tuple[Any, Any] | None:
    """(old, new) served items if what this viewer receives differs, else None (served_item: the
    version a viewer gets, rollouts and the served version's own tags included; `parts`: the
    snippet versions a composed entry's text is expanded with, registry/serving/composed.py)."""
    before, after = served_item(old, viewer), served_item(new, viewer)
    if before is None and after is None:
        return None
    if before is not None and after is not None and before.version == after.version \
            and before.tags == after.tags and before.parts == after.parts:
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
        pools = {"prompt": self.prompt_items, "resource": self.resource_items, "template": self.templates}
        return pools[kind]

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
        return {"prompt": record.prompt_items, "resource": record.resource_items,
                "template": record.templates}
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


Note = tuple[str, dict[str, Any] | None]  # (notification method, its params)


def notifications_for(listener: Listener, diff: LabelDiff, new: Catalog) -> list[Note]:
    """The notifications one listener should get for one label's diff (deduplicated).

    Judged on what this listener's viewer is served: entries outside its scope, and rollout
    changes that leave its bucket on the same version, announce nothing to it."""
    viewer = listener.viewer
    out: list[Note] = []
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


def dynamic_updates(listener: Listener, old: Catalog | Told | None, new: Catalog,
                    batch: Iterable[Change]) -> list[str]:
    """Subscribed URIs of built-in dynamic resources (registry/serving/dynamic.py) that a batch alters.

    A change counts when its kind is one the provider depends on, the provider says it alters
    the subscribed URI (a changelog cares about its own prompt only), and this listener may see
    the changed entry before or after: a change outside its scope is not in what it reads."""
    viewer = listener.viewer
    wanted = {uri for uri in listener.uris if uri not in new.resource_items}  # a stored resource wins
    updated: dict[str, None] = {}
    for change in batch:
        if not wanted:
            break
        uris = affected_uris(wanted, change.kind, change.key)
        if uris and (change.key == "*" or any(catalog is not None
                                              and visible(catalog, viewer, change.kind, change.key)
                                              for catalog in (old, new))):
            updated.update(dict.fromkeys(uris))
            wanted.difference_update(uris)
    return list(updated)

