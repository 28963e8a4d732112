"""This process's catalogs, one per label: built from the database, refreshed by changed keys,
kept while fresh (`changes.generation()`), and read partly for cold list pages.

A build holds `_build_lock` for its whole read and counts as held (`held_labels`) until it is
stored, so a change delivered meanwhile waits for it and re-reads its keys (registry/serving/
catalog.py says what a catalog answers; registry/serving/items.py what it holds).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from itertools import groupby
from operator import attrgetter
from types import MappingProxyType
from typing import Any

from django.db.models import Q

from registry import changes
from registry.kinds import KINDS
from registry.models import PRODUCTION, PromptLabel, ResourceLabel, ResourceTemplateLabel, Rollout
from registry.serving.catalog import Catalog
from registry.serving.composed import SnippetMaps, moved, read_snippet_maps, uses_any
from registry.serving.heap import release_freed_memory
from registry.serving.id_lists import id_in
from registry.serving.items import (
    ITEM_BUILDERS,
    ROW_FIELDS,
    SNIPPET_ROLLOUT,
    ItemRollout,
    Row,
    created_stored,
    decode_listing,
    fallback_names,
    forget_shared,
    listing_text,
    pick_served,
    projected_rows,
    rollout_applies,
    snippet_of,
    with_parts,
)
from registry.serving.per_generation import remembered
from registry.serving.yielding import CHECKPOINT_EVERY, build_awaited, checkpoint

_cache: dict[str, Catalog] = {}
_build_lock = threading.Lock()
_building: set[str] = set()  # the label whose catalog is being built or refreshed (under _build_lock)


def cached_catalog(label: str) -> Catalog | None:
    """The current catalog for `label` if it is fresh; never touches the database."""
    catalog = _cache.get(label)
    if catalog is not None and catalog.generation == changes.generation():
        return catalog
    return None


@contextmanager
def _build_locked() -> Iterator[None]:
    """`_build_lock`, its wait marked: a build under way does not give way to requests while a
    caller waits for it (registry/serving/yielding.py)."""
    with build_awaited():
        _build_lock.acquire()
    try:
        yield
    finally:
        _build_lock.release()


def load_catalog(label: str) -> Catalog:
    """Build (or reuse) the catalog for `label` from the database. Call from a sync context."""
    with _build_locked():
        fresh = cached_catalog(label)
        if fresh is not None:
            return fresh
        return _build(label, None, None)


def refresh_catalog(label: str, changed: Iterable[tuple[str, str]]) -> Catalog:
    """Bring `label`'s catalog up to date by re-reading only the changed (kind, key) pairs.

    Notifications go out right after a change, so this keeps the per-change cost at a few
    small queries instead of a full rebuild; a key of "*" (bulk loads) rebuilds everything.
    """
    changed = list(changed)
    with _build_locked():
        base = _cache.get(label)
        if base is None or any(key == "*" for _kind, key in changed):
            return _build(label, None, None)
        return _build(label, base, changed)


_KEY_FIELDS = {"prompt": "entry__name__in", "resource": "entry__uri__in", "template": "entry__uri_template__in"}


def _build(label: str, base: Catalog | None, changed: list[tuple[str, str]] | None) -> Catalog:
    # Counted as held from before its read until it is stored (held_labels), so a change
    # delivered meanwhile waits for this build and refreshes what it read.
    _building.add(label)
    try:
        catalog = _read(label, base, changed)
        _cache[label] = catalog
    finally:
        _building.discard(label)
    if base is None:
        release_freed_memory()
    return catalog


def read_entries(label: str, entry_ids: Mapping[str, Iterable[int] | None]) -> Catalog:
    """A catalog of `label` holding only the given entries of each kind (None: every entry of that
    kind; a kind left out: none), plus every entry with a running rollout on the label, so that
    `personalised()` and `variant()` answer as the whole catalog would. Never cached: it answers
    one request while the whole catalog warms up (registry/serving/pages.py). Its rows are read
    from the label rows' projections of their versions (`items.projected_rows`), not from the
    version rows a whole build reads."""
    rolled = rollout_entries(fallback_names(label))
    return _read(label, None, None, {kind: None if ids is None else sorted(set(ids) | rolled.get(kind, frozenset()))
                                     for kind, ids in {**dict.fromkeys(rolled, ()), **entry_ids}.items()})


def entry_item(label: str, kind: str, entry_id: int) -> Any | None:
    """The item `label` serves of one entry, with the rollout running on it, as the catalog holds
    it but for completion's suggestions, which a part leaves unread (None: `label` serves nothing
    of it). With `viewer.served_item` this answers "which version does this client get of this
    entry" for the admin pages without a whole catalog (sync: a few queries). Always asks the
    database which rollouts run: an admin-only process may never catch up on other processes'
    changes, so a probe kept per generation could hide a rollout begun elsewhere."""
    part = _read(label, None, None, {kind: [entry_id]}, fresh=True)
    pool: Iterable[Any] = {"prompt": part.prompt_items.values(), "resource": part.resource_items.values(),
                           "template": part.template_items}[kind]
    return next(iter(pool), None)


def _read(label: str, base: Catalog | None, changed: list[tuple[str, str]] | None,
          entry_ids: Mapping[str, Iterable[int] | None] | None = None, fresh: bool = False) -> Catalog:
    """The catalog built from the database: all of it (no base), `base` with the `changed` keys
    re-read, or (entry_ids) just those entries. The same row rules serve all three. `fresh`: ask
    the rollout query even where the generation's probe says none runs."""
    generation = changes.generation()
    names = fallback_names(label)
    wanted: dict[str, set[str]] = {}
    for kind, key in changed or ():
        wanted.setdefault(kind, set()).add(key)
    partial = entry_ids is not None
    reread: dict[str, list[int] | None] = {}  # partial: kind -> the entry ids to read (None: all of them)
    if entry_ids is not None:
        reread = {kind: None if ids is None else list(ids) for kind, ids in entry_ids.items()}
    elif base is None:
        forget_shared()
    share = not partial  # a part answers one request: its values are not worth sharing

    def rows(model: Any, kind: str) -> Iterable[Row]:
        qs = model.objects.filter(name__in=names).of_unarchived_entries()
        if base is not None:
            qs = qs.filter(**{_KEY_FIELDS[kind]: sorted(wanted.get(kind, ()))})
        ids = reread.get(kind) if partial else None
        if ids is not None:
            qs = qs.filter(id_in(model, "entry_id", ids))
        if not share:  # a part: from the label rows' projections of their versions
            return projected_rows(qs.order_by("entry_id", "name"), kind)
        qs = qs.annotate(listing_text=listing_text(kind, share)).order_by("entry_id", "name")
        if kind != "resource":  # only resources list a date
            return (Row(entry_id, name, version_id, number, decode_listing(listing, share), None)
                    for entry_id, name, version_id, number, listing
                    in qs.values_list(*ROW_FIELDS[:5]).iterator(chunk_size=2000))
        return (Row(entry_id, name, version_id, number, decode_listing(listing, share), created)
                for entry_id, name, version_id, number, listing, created
                in qs.annotate(created_stored=created_stored()).values_list(*ROW_FIELDS).iterator(chunk_size=2000))

    # Snippet rows are read once, when the first item with includes needs them; a refresh keeps the
    # base's unless a snippet changed (then every item following it is re-resolved, below).
    snippet_names = {snippet_of(kind, key) for kind, key in changed or () if kind in ("snippet", SNIPPET_ROLLOUT)}
    maps_found: list[SnippetMaps | None] = [base.snippets if base is not None and not snippet_names else None]

    def maps() -> SnippetMaps:
        found = maps_found[0]
        if found is None:
            found = maps_found[0] = read_snippet_maps(label)
        return found

    def reads(kind: str) -> bool:
        return kind in reread if partial else base is None or kind in wanted

    prompts = dict(base.prompt_items) if base else {}
    resources = dict(base.resource_items) if base else {}
    templates = {t.uri_template: t for t in base.template_items} if base else {}
    read_keys: dict[str, dict[int, str]] = {}  # kind -> entry id -> the key its item is served under

    def items(kind: str, model: Any) -> Iterable[tuple[str, Any]]:
        # Rows come ordered by entry, so the rule picks among one entry's rows at a time and its
        # item is built at once: the decoded rows it does not keep are freed before the next
        # entry's are read, and their memory is reused instead of left as holes between the
        # items kept (holding every row first left about a third of the catalog's size free).
        # A whole build gives way to the requests served beside it every CHECKPOINT_EVERY
        # entries (registry/serving/yielding.py); a part is a request's own read and never pauses.
        keys = read_keys.setdefault(kind, {})
        for count, (_entry_id, entry_rows) in enumerate(groupby(rows(model, kind), key=attrgetter("entry_id"))):
            if share and count % CHECKPOINT_EVERY == 0:
                checkpoint()
            for row in pick_served(entry_rows, label).values():
                item = compose(ITEM_BUILDERS[kind](row, share), row.listing, maps)
                keys[row.entry_id] = item.key
                yield item.key, item

    if reads("prompt"):
        for key in wanted.get("prompt", ()):
            prompts.pop(key, None)
        prompts.update(items("prompt", PromptLabel))
    if reads("resource"):
        for key in wanted.get("resource", ()):
            resources.pop(key, None)
        resources.update(items("resource", ResourceLabel))
    if reads("template"):
        for key in wanted.get("template", ()):
            templates.pop(key, None)
        templates.update(items("template", ResourceTemplateLabel))
    if snippet_names and base is not None:
        _resolve_again(snippet_names, maps, read_keys, prompts, resources, templates)
    met = _attach_rollouts(names, read_keys, base is not None, maps, prompts, resources, templates, fresh=fresh) \
        if base is None or wanted else None
    if base is None:  # a build's rollout query met the snippet rollouts too
        snippet_rows = met or []
    elif snippet_names:  # a refresh after a snippet change reads them again
        snippet_rows = _snippet_rollout_rows(names)
    else:  # no snippet changed: the same snippet rollouts run
        snippet_rows = list(base.snippet_rollouts)
    applied = _attach_snippet_rollouts(snippet_rows, bool(base and base.snippet_rollouts), maps,
                                       prompts, resources, templates)
    rolled_out = tuple(item for pool in (prompts, resources, templates) for item in pool.values()
                       if item.rollout is not None)
    return Catalog(label, generation, prompts, resources, sorted(templates.values(), key=lambda t: t.uri_template),
                   rolled_out=rolled_out, partial=partial, snippets=maps_found[0], snippet_rollouts=applied)


def compose(item: Any, listing: Mapping[str, Any], maps: Callable[[], SnippetMaps]) -> Any:
    """`item` with its parts resolved when its listing includes snippets (else `item` itself)."""
    includes = (listing or {}).get("includes")
    if not includes:
        return item
    includes = tuple(includes)
    return with_parts(item, maps().parts(item.label, includes), includes)


def _resolve_again(names: set[str], maps: Callable[[], SnippetMaps], read_keys: dict[str, dict[int, str]],
                   *pools: dict[str, Any]) -> None:
    """After a change of the snippets `names`: every item not just re-read that follows one of them
    (directly or through another snippet), and its rollout's candidate, gets its parts again."""

    def again(item: Any) -> Any:
        if item.rollout is not None and item.rollout.snippet:
            item = replace(item, rollout=None)  # attached again afterwards (_attach_snippet_rollouts)
        if item.composed:
            item = with_parts(item, maps().parts(item.label, item.includes))
        if item.rollout is not None and item.rollout.candidate.composed:
            candidate = item.rollout.candidate
            item = replace(item, rollout=ItemRollout(item.rollout.percent, with_parts(
                candidate, maps().parts(candidate.label, candidate.includes))))
        return item

    for kind, pool in zip(("prompt", "resource", "template"), pools, strict=True):
        fresh = set(read_keys.get(kind, {}).values())
        for key, item in list(pool.items()):
            if key not in fresh and uses_any(item, names):
                pool[key] = again(item)


def rollout_entries(names: list[str]) -> Mapping[str, frozenset[int]]:
    """Per kind (snippets too), the entries with a rollout running on one of `names` (one small
    query, once per generation: registry/serving/per_generation.py)."""

    def ask() -> Mapping[str, frozenset[int]]:
        out: dict[str, set[int]] = {}
        for kind, entry_id in Rollout.objects.filter(label__in=names).values_list("entry_kind", "entry_id"):
            out.setdefault(kind, set()).add(entry_id)
        return MappingProxyType({kind: frozenset(ids) for kind, ids in out.items()})

    return remembered(("rollout entries", tuple(names)), ask)


def _attach_rollouts(names: list[str], read_keys: dict[str, dict[int, str]], only_read: bool,
                     maps: Callable[[], SnippetMaps], *pools: dict[str, Any],
                     fresh: bool = False) -> list[tuple[str, str, int, int]] | None:
    """Give each item just read the rollout running on the label it is served from; one query if none run.

    Matched by entry id: a rollout row names the entry by its draft key when the rollout began, which
    differs from the key the label serves once the draft is renamed. `only_read`: a refresh, which
    asks only about the entries it re-read (few). Returns the snippet rollouts the query met (None:
    a refresh's query asks for none)."""
    if not fresh and not rollout_entries(names):  # none runs on these labels at this generation: no query
        return None if only_read else []
    rows = Rollout.objects.filter(label__in=names)
    if only_read:
        wanted = Q()
        for kind, keys in read_keys.items():
            if keys:
                wanted |= Q(entry_kind=kind, entry_id__in=sorted(keys))
        if not wanted:
            return None
        rows = rows.filter(wanted)
    by_kind = dict(zip(("prompt", "resource", "template"), pools, strict=True))
    snippets: list[tuple[str, str, int, int]] = []
    for rollout in rows:
        if rollout.entry_kind == "snippet":
            snippets.append((rollout.entry_key, rollout.label, rollout.candidate_version, rollout.percent))
            continue
        pool = by_kind.get(rollout.entry_kind)
        key = read_keys.get(rollout.entry_kind, {}).get(rollout.entry_id)
        item = pool.get(key) if pool is not None and key is not None else None
        if (pool is None or key is None or item is None
                or not rollout_applies(item.label, item.version, rollout.label, rollout.candidate_version)):
            continue
        found = KINDS[rollout.entry_kind].version_model.objects.filter(
            entry_id=rollout.entry_id, number=rollout.candidate_version).values_list(
            "entry_id", "id", "number", "listing", "created_at").first()
        if found is None:
            continue
        entry_id, version_id, number, listing, created_at = found
        candidate = compose(ITEM_BUILDERS[rollout.entry_kind](Row(entry_id, rollout.label, version_id, number,
                                                                    listing, created_at)), listing, maps)
        pool[key] = replace(item, rollout=ItemRollout(rollout.percent, candidate))
    return None if only_read else snippets


def _snippet_rollout_rows(names: list[str]) -> list[tuple[str, str, int, int]]:
    """The snippet rollouts running on `names`: (snippet name, label, candidate version, percent)."""
    return list(Rollout.objects.filter(label__in=names, entry_kind="snippet").order_by("entry_key", "label")
                .values_list("entry_key", "label", "candidate_version", "percent"))


def _attach_snippet_rollouts(rows: list[tuple[str, str, int, int]], had_any: bool, maps: Callable[[], SnippetMaps],
                             *pools: dict[str, Any]) -> tuple[tuple[str, str, int, int], ...]:
    """Give every item that follows a rolled-out snippet on the label row it is served from that
    snippet's rollout: its own version expanded with the candidate, for the share of clients whose
    bucket by the snippet's name is in (registry/serving/viewer.py). An entry's own rollout wins
    (registry/release/rollouts.py refuses to start one beside the other); of two snippets rolling out
    in one entry, the first by name. Returns the rollouts that apply (the label row serves the
    snippet, another version than the candidate). Costs nothing while no snippet rolls out."""
    if not rows and not had_any:
        return ()
    for pool in pools:  # the base's snippet rollouts go; the running ones are attached again below
        for key, item in list(pool.items()):
            if item.rollout is not None and item.rollout.snippet:
                pool[key] = replace(item, rollout=None)
    applied = []
    for name, row, candidate_version, percent in sorted(rows):
        current = maps().rows.get(row, {}).get(name)
        if current is None or current[0] == candidate_version:
            continue
        applied.append((name, row, candidate_version, percent))
        candidate_maps = moved(maps(), row, name, candidate_version)
        for pool in pools:
            for key, item in list(pool.items()):
                if item.rollout is not None or not item.composed or name not in dict(item.parts):
                    continue
                # The row its following reference to the snippet resolves from: its own label's, else production's.
                if (item.label if name in maps().rows.get(item.label, {}) else PRODUCTION) != row:
                    continue
                candidate = with_parts(item, candidate_maps.parts(item.label, item.includes))
                if candidate.parts != item.parts:
                    pool[key] = replace(item, rollout=ItemRollout(percent, candidate, snippet=name,
                                                                  snippet_version=candidate_version))
    return tuple(applied)


def held_labels() -> set[str]:
    """Labels this process holds a catalog of, fresh or not, or is building one of (whoever keeps
    them current can refresh them by the changed keys instead of leaving a stale one to a full
    rebuild).

    A build under way counts: it may have read an entry before a change committed, and the
    catalog it stores would otherwise miss that change for good once a later change refreshed it
    by its own keys and stamped it current. Refreshing it waits for the build (_build_lock)."""
    return set(_cache) | set(_building)


def forget_catalogs() -> None:
    """Drop every cached catalog; the next use rebuilds from the database (after a failed refresh)."""
    with _build_locked():
        _cache.clear()


def catalog_for(label: str) -> Catalog:
    return cached_catalog(label) or load_catalog(label)
