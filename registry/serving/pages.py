"""One list page straight from the database, for requests that find no fresh catalog.

Building a label's whole catalog reads every entry it serves (about a second at 20k prompts +
20k resources), so the first list request after a start, or after a change retired the
catalog, would wait for it. Instead such a request is answered from the database: the entries
of its page are found in key order (keyset: key > the cursor's last key, LIMIT page + 1, or a
longer run when the request continues a walk, registry/serving/page_runs.py) and the catalog
code builds just those (`catalogs.read_entries`, from the label rows' projections of their
versions, registry.models.base.served_projection), so the label fallback, scope tags, rollouts
and dynamic resources follow the catalog's own rules; meanwhile the whole catalog warms up in
the background (registry/serving/warmup.py).

The order is the catalog's: the key the served version is listed under (a draft may be
renamed), kept on each label row as `served_key` (indexed with the label name, so the first
page reads about a page of rows), compared by code point as Python's `sorted` does (SQLite's
BINARY collation compares UTF-8 bytes, the same order; PostgreSQL is told to use "C", and has an
index in that collation, migration 0018, as one in the database's own would not serve the query).
Label rows without one (written around the model) make the page read the key from the
version's listing instead.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.db.models import Exists, F, OuterRef, Q, QuerySet, TextField
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import Cast, Coalesce, Collate

from registry import changes
from registry.formats.uris import lookup_uri
from registry.kinds import KINDS
from registry.models import PRODUCTION
from registry.serving import catalogs, dynamic
from registry.serving import page_runs as runs
from registry.serving.catalog import Catalog
from registry.serving.heap import collector_paused
from registry.serving.items import fallback_names
from registry.serving.per_generation import remembered
from registry.serving.viewer import Viewer, served_item

try:
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency
    from json import loads as _loads  # type: ignore[assignment]  # takes no memoryview, unlike orjson's

# The served key of each listed kind: from the listing column, else the snapshot (versions
# written without a listing); templates are few and always read whole.
_KEYS = {"prompt": (("version__listing", "item", "name"), ("version__snapshot", "name")),
         "resource": (("version__listing", "item", "uri"), ("version__snapshot", "uri"))}
_SCAN_CHUNK = 200


def page_catalog(label: str, kind: str, viewer: Viewer, after: str | None, count: int) -> Catalog:
    """A catalog that answers the `kind` list page after the key `after` for `viewer`: the
    label's whole catalog if it is fresh by now, else one holding at least the first `count`
    entries of `kind` visible to `viewer` after `after` (`catalog.partial` is then true): a run
    read earlier at this generation if one covers the page (`cached_page`), else a new run read
    from the database, longer when it continues one (a walk through the list). Sync: queries."""
    fresh = catalogs.cached_catalog(label)
    if fresh is not None:
        runs.forget(label)
        return fresh
    if kind == "template":
        return catalogs.read_entries(label, {"template": None})
    found = runs.covering(label, kind, viewer, after, count)
    if found is not None:
        return found
    previous = runs.continued(label, kind, viewer, after)
    size = max(count, runs.next_size(previous))
    generation = changes.generation()  # before the first read: a change committed meanwhile retires the run
    with collector_paused():  # the run's objects all survive: collecting meanwhile finds nothing (heap.py)
        keyed = visible_keys(label, kind, viewer, after, size)
        ids = [entry_id for entry_id, _key in keyed]
        if kind == "resource":  # a stored resource of a dynamic resource's URI hides the dynamic one
            ids += _ids_of(_served(label, kind).filter(sort_key__in=[p.uri for p in dynamic.fixed()]))
        catalog = catalogs.read_entries(label, {kind: ids})
    catalog.generation = generation
    runs.add(runs.Run(label, kind, viewer.scope_tags, after, keyed[-1][1] if keyed else None, len(keyed) < size,
                      size, catalog, runs.walk_of(previous)))
    return catalog


def cached_page(label: str, kind: str, viewer: Viewer, after: str | None, count: int) -> Catalog | None:
    """Without a query (the event loop may ask): the label's fresh catalog, else a run read at
    this generation that holds the page `page_catalog` would read, else None."""
    fresh = catalogs.cached_catalog(label)
    if fresh is not None:
        runs.forget(label)
        return fresh
    return runs.covering(label, kind, viewer, after, count) if kind != "template" else None


def entry_catalog(label: str, kind: str, key: str, viewer: Viewer) -> Catalog | None:
    """For `prompts/get` and `resources/read` (kind prompt, resource) while no catalog is fresh:
    a catalog holding just the entry served under `key`, if that alone answers the request (it
    exists, `viewer` sees it, and it is not a prompt whose arguments name resources, which asks
    about every resource); else None: wait for the whole catalog. The whole one if fresh."""
    fresh = catalogs.cached_catalog(label)
    if fresh is not None:
        return fresh
    if kind == "resource":
        try:
            key = lookup_uri(key)
        except Exception:  # not a URI: the whole catalog gives the error
            return None
    ids = _ids_of(_served(label, kind).filter(sort_key=key))
    if not ids:
        return None
    part = catalogs.read_entries(label, {kind: ids})
    served = served_item((part.prompt_items if kind == "prompt" else part.resource_items).get(key), viewer)
    if served is None:
        return None
    if kind == "prompt" and served.resource_arguments:
        return None
    return part


def first_visible(label: str, kind: str, viewer: Viewer, after: str | None, count: int) -> list[int]:
    """Entry ids of the first `count` entries of `kind` (prompt, resource) that `viewer` sees and
    whose served key sorts after `after`, in key order; fewer when the list ends sooner."""
    return [entry_id for entry_id, _key in visible_keys(label, kind, viewer, after, count)]


def visible_keys(label: str, kind: str, viewer: Viewer, after: str | None, count: int) -> list[tuple[int, str]]:
    """(entry id, served key) of the first `count` entries of `kind` (prompt, resource) that
    `viewer` sees and whose served key sorts after `after`, in key order; fewer when the list ends
    sooner.

    Entries with a rollout running are left out: `catalogs.read_entries` adds every one of them
    anyway, and whether this viewer sees one depends on the version it is served (the rollout's
    candidate, with its own tags, or the label's), which `served_item` decides there."""
    rows = _served(label, kind)
    rolled = catalogs.rollout_entries(fallback_names(label)).get(kind)
    if rolled:
        rows = rows.exclude(entry_id__in=sorted(rolled))
    if after is not None:
        rows = rows.filter(sort_key__gt=after)
    rows = rows.order_by("sort_key", "entry_id")
    if not viewer.scope_tags:
        return list(rows.values_list("entry_id", "sort_key")[:count])
    # Scope tags live in a JSON list: read them in key order and stop once the page is full.
    tags = Coalesce(_text(("version__listing", "tags")), _text(("version__snapshot", "tags")))
    found: list[tuple[int, str]] = []
    for entry_id, key, text in rows.annotate(tags_text=Cast(tags, TextField())).values_list(
            "entry_id", "sort_key", "tags_text").iterator(chunk_size=_SCAN_CHUNK):
        if viewer.sees(frozenset(_loads(text) if text else ())):
            found.append((entry_id, key))
            if len(found) >= count:
                break
    return found


def _served(label: str, kind: str) -> QuerySet[Any]:
    """The label rows `label` serves of `kind`, one per unarchived entry (its own label row, else
    production's), annotated with the served key as `sort_key`."""
    labels: Any = KINDS[kind].label_model.objects
    names = fallback_names(label)
    rows = labels.filter(name__in=names).of_unarchived_entries()
    if label != PRODUCTION:
        rows = rows.filter(Q(name=label) | ~Exists(labels.filter(entry_id=OuterRef("entry_id"), name=label)))
    if remembered(("unkeyed label rows", kind, tuple(names)),
                  lambda: labels.filter(name__in=names, served_key="").exists()):
        # Rows written around the model (raw SQL): read the key from the version, more slowly.
        listed, snapshot = _KEYS[kind]
        return rows.annotate(sort_key=_code_point_order(Coalesce(_text(listed), _text(snapshot))))
    return rows.annotate(sort_key=_code_point_order(F("served_key")))


def _text(path: tuple[str, ...]) -> Any:
    """A JSON value as text: path = (the JSON field, across relations, then its keys)."""
    field, *keys = path
    value: Any = field
    for key in keys[:-1]:
        value = KeyTransform(key, value)
    return KeyTextTransform(keys[-1], value)


def _code_point_order(expression: Any) -> Any:
    return Collate(expression, "C") if connection.vendor == "postgresql" else expression


def _ids_of(rows: Iterable[Any]) -> list[int]:
    return list(rows.values_list("entry_id", flat=True))  # type: ignore[attr-defined]
