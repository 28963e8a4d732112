"""The items a catalog holds: one frozen record per served entry version, built from label rows.

Each item carries what lists and completions need (the version's small `listing` column, see
registry/authoring/listing.py), never message bodies or documents; recurring strings and tuples
are shared across items so a large catalog stays small. `pick_served` is the label fallback rule
(a label's own row, else production's) that the catalog and the consistency check both apply.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, fields, replace
from datetime import UTC, datetime
from typing import Any, ClassVar, NamedTuple

from django.db import connection
from django.db.models import F, Func, TextField
from django.db.models.functions import Cast
from django.utils.dateparse import parse_datetime
from django.utils.timezone import is_aware, make_aware

from registry.authoring.listing import listing_of
from registry.formats.uris import UriTemplateMatcher, lookup_uri, normalize_uri_template
from registry.kinds import KINDS
from registry.models.base import PRODUCTION
from registry.serving.id_lists import id_in

try:  # several times faster than the stdlib decoder, and it shares repeated keys
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib is the fallback
    _loads = json.loads  # type: ignore[assignment]  # the stdlib's takes no memoryview; unused in practice

try:  # the sharing key (_share_key): compact JSON, encoded in C
    from orjson import dumps as _dumps
except ImportError:  # pragma: no cover - as above
    def _dumps(value: Any) -> str:  # type: ignore[misc]
        return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


@dataclass(frozen=True)
class Served:
    """A rendered result plus which version produced it, for per-client fetch counting."""

    result: dict[str, Any]
    kind: str
    key: str
    version: int
    label: str
    ttl_ms: int | None = None  # a provider's own caching hints (registry/serving/dynamic.py); None: the defaults
    cache_scope: str | None = None
    counted: bool = True  # computed resources are not versions a client could be counted as fetching


# The consistency check's key of a snippet's rollout on a label row: ("snippet-rollout", "name@label").
SNIPPET_ROLLOUT = "snippet-rollout"


def snippet_of(kind: str, key: str) -> str:
    """The snippet a ("snippet", name) or ("snippet-rollout", "name@label") key is about."""
    return key.rsplit("@", 1)[0] if kind == SNIPPET_ROLLOUT else key


@dataclass(frozen=True, slots=True)
class ItemRollout:
    """A running percentage rollout: `candidate` (an item like its owner) for `percent`% of clients.

    The entry's own rollout serves another of its versions. A snippet's rollout (`snippet` set)
    serves the same version with the snippet's candidate expanded in it (`candidate.parts`),
    bucketed by the snippet's name, so one client gets the candidate in every entry that
    follows the snippet, or in none (registry/serving/catalogs.py attaches it)."""

    percent: int
    candidate: Any  # PromptItem | ResourceItem | TemplateItem
    snippet: str = ""  # the snippet whose rollout this is ("": the entry's own)
    snippet_version: int = 0  # that snippet's candidate version

    def bucket_key(self, item_key: str) -> str:
        """What a client's stable bucket is drawn on: the snippet's name, else the entry's key."""
        return self.snippet or item_key

    @property
    def tag(self) -> str:
        """What tells this rollout's candidate apart in cache keys and the admin's words."""
        return f"{self.snippet} v{self.snippet_version}" if self.snippet else f"v{self.candidate.version}"


@dataclass(frozen=True, slots=True)
class PromptItem:
    name: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    suggestions: Mapping[str, Sequence[str]]
    version_id: int = 0  # the version row: what the compiled body is cached and loaded by
    rollout: ItemRollout | None = None
    resource_arguments: frozenset[str] = frozenset()  # arguments whose values are registry resource URIs
    parts: ClassVar[tuple[tuple[str, int], ...]] = ()  # see ComposedPromptItem
    composed: ClassVar[bool] = False

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class ResourceItem:
    uri: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    ref: Mapping[str, Any]  # {uri, mimeType, sha256, size, encoding}: where the bytes are, not the bytes
    version_id: int = 0
    rollout: ItemRollout | None = None
    parts: ClassVar[tuple[tuple[str, int], ...]] = ()
    composed: ClassVar[bool] = False

    @property
    def key(self) -> str:
        return self.uri


@dataclass(frozen=True, slots=True)
class TemplateItem:
    uri_template: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    matcher: UriTemplateMatcher
    mime_type: str
    suggestions: Mapping[str, Sequence[str]]
    version_id: int = 0
    rollout: ItemRollout | None = None
    parts: ClassVar[tuple[tuple[str, int], ...]] = ()
    composed: ClassVar[bool] = False

    @property
    def key(self) -> str:
        return self.uri_template


# Items whose texts include snippets (their listing has `includes`): the same records plus `parts`,
# the (snippet name, version number) their following references resolve to on the label they are
# served from (registry/serving/composed.py). A subclass, so items without snippets cost nothing more.
@dataclass(frozen=True, slots=True)
class ComposedPromptItem(PromptItem):
    parts: tuple[tuple[str, int], ...] = ()  # type: ignore[misc]  # an instance field where the base has ()
    includes: tuple[str, ...] = ()  # the listing's `includes`: what the parts are resolved from
    composed: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class ComposedResourceItem(ResourceItem):
    parts: tuple[tuple[str, int], ...] = ()  # type: ignore[misc]
    includes: tuple[str, ...] = ()
    composed: ClassVar[bool] = True


@dataclass(frozen=True, slots=True)
class ComposedTemplateItem(TemplateItem):
    parts: tuple[tuple[str, int], ...] = ()  # type: ignore[misc]
    includes: tuple[str, ...] = ()
    composed: ClassVar[bool] = True


_COMPOSED: dict[type, type] = {PromptItem: ComposedPromptItem, ResourceItem: ComposedResourceItem,
                               TemplateItem: ComposedTemplateItem}


def with_parts(item: Any, parts: tuple[tuple[str, int], ...], includes: tuple[str, ...] = ()) -> Any:
    """`item` as a composed item with these parts (of a composed one: the same with new parts)."""
    if item.composed:
        return item if item.parts == parts else replace(item, parts=parts)
    base = type(item)
    return _COMPOSED[base](*(getattr(item, f.name) for f in fields(base)), parts=parts, includes=includes)


class Row(NamedTuple):
    entry_id: int
    name: str  # the label the row is served from
    version_id: int
    number: int
    listing: dict[str, Any]
    created_at: Any


ROW_FIELDS = ("entry_id", "name", "version_id", "version__number", "listing_text", "created_stored")


class _ListingWithoutSuggestions(Func):
    """The listing column as text without its `suggestions`, dropped by the database (SQLite's
    json_remove, PostgreSQL's jsonb minus a key)."""

    output_field = TextField()

    def as_sqlite(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        return f"json_remove({sql}, '$.suggestions')", params

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> Any:
        sql, params = compiler.compile(self.source_expressions[0])
        # jsonb refuses to take a key out of a scalar; a listing written around the model may be one.
        return (f"(CASE WHEN jsonb_typeof({sql}) = 'object' THEN ({sql}) - 'suggestions' ELSE ({sql}) END)::text",
                (*params, *params, *params))


def listing_text(kind: str, share: bool) -> Any:
    """What rows of `kind` read as `listing_text`. A part (`share` false) answers list pages and
    reads, never a completion, so its prompts and templates leave completion's suggestions in the
    database: decoding them was over a third of a cold walk of prompts (bench/cold_listing.py).
    Resources have none, and asking the database to take them out would cost it a parse."""
    if share or kind == "resource" or connection.vendor not in ("sqlite", "postgresql"):
        return Cast("version__listing", output_field=TextField())
    return _ListingWithoutSuggestions("version__listing")


def created_stored() -> Any:
    """What rows read as `created_stored`: the version's creation time as SQLite stores it, as text
    (parsing 20k of them into aware datetimes was a tenth of a cold walk of resources,
    bench/cold_listing.py), else (PostgreSQL, whose driver returns datetimes in C) the column."""
    if connection.vendor == "sqlite" and connection.timezone_name == "UTC":
        return Cast("version__created_at", output_field=TextField())
    return F("version__created_at")


def projected_rows(rows: Any, kind: str) -> list[Row]:
    """The rows of a part read from the label rows' projections of their versions
    (registry.models.base.served_projection), in entry order: no version row is read, as a
    version row holds its whole snapshot. A row whose projection is missing, malformed or names
    another version than the row does (written around the model) is read from its version as a
    whole build reads it, so a stale projection is never served."""
    found: list[Row] = []
    stale: list[int] = []
    for pk, entry_id, name, version_id, served in rows.values_list(
            "pk", "entry_id", "name", "version_id", "served").iterator(chunk_size=2000):
        try:
            projected_version, number, created, listing = _loads(served)
        except (ValueError, TypeError):  # none, or not the projection's shape
            stale.append(pk)
            continue
        if projected_version != version_id or not isinstance(listing, dict) or not created:
            stale.append(pk)
            continue
        found.append(Row(entry_id, name, version_id, number, listing, created))
    if stale:
        from_versions = rows.filter(id_in(rows.model, "id", stale)).annotate(
            listing_text=listing_text(kind, False), created_stored=created_stored())
        found += (Row(entry_id, name, version_id, number, decode_listing(listing, False), created)
                  for entry_id, name, version_id, number, listing, created in from_versions.values_list(*ROW_FIELDS))
        found.sort(key=lambda row: (row.entry_id, row.name))
    return found


# Django's SQLite backend stores an aware datetime as its UTC value's str(): "YYYY-MM-DD HH:MM:SS"
# with ".ffffff" when the microseconds are not 0. Anything else (written around the model, or a
# future Django) is parsed instead.
_STORED_UTC = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?")


def last_modified(created: datetime | str) -> str:
    """A stored time as clients are shown it (ISO 8601, UTC, "Z"): resources' `lastModified`, and
    the times in the history resources (registry/serving/dynamic.py)."""
    if isinstance(created, str):
        if _STORED_UTC.fullmatch(created):
            return f"{created[:10]}T{created[11:]}Z"
        parsed = parse_datetime(created)
        if parsed is None:
            raise ValueError(f"not a stored time: {created!r}")
        created = parsed if is_aware(parsed) else make_aware(parsed, UTC)
    return created.astimezone(UTC).isoformat().replace("+00:00", "Z")


# Listing values that recur across entries (MIME types, encodings, tags, argument schemas,
# suggestions): one shared string each instead of one per entry keeps a large catalog small.


def _intern(value: Any) -> Any:
    return sys.intern(value) if isinstance(value, str) and len(value) <= 200 else value


def _share(listing: dict[str, Any]) -> dict[str, Any]:
    item = listing.get("item") or {}
    for part in (item, listing.get("content") or {}):
        for key in ("mimeType", "encoding"):
            if key in part:
                part[key] = _intern(part[key])
    for argument in item.get("arguments") or ():
        for key in ("name", "title", "description"):
            if key in argument:
                argument[key] = _intern(argument[key])
    return listing


def _share_key(value: Any) -> bytes | str | None:
    """What tells equal decoded JSON values apart as JSON does (True, 1 and 1.0 are equal in Python
    but not in JSON): the value's compact JSON text, in its own key order. None: not plain JSON
    (an integer beyond 64 bits, a key that is not a string, a lone surrogate), so never shared.
    Encoded in C: the recursive Python walk it replaces was over half of a whole build's time (a
    20k + 20k build in process: 0.92-1.03 s before, 0.48-0.56 s after; README "Cold start").
    Lists and tuples encode alike; `_shared_value` tells them apart at the top, and below it each
    caller's values are built one way (decoded arguments hold lists; suggestion mappings tuples)."""
    try:
        return _dumps(value)
    except (TypeError, ValueError):  # orjson.JSONEncodeError is a TypeError; the stdlib raises either
        return None


def _shared_value(value: Any) -> Any:
    """One object for equal argument lists and suggestion mappings across a build's items (many
    prompts take the same arguments): items never change what they hold, so sharing is safe.
    Kept by the hash of the value's key alone, so a value no other item repeats costs an int."""
    key = _share_key(value)
    if key is None:
        return value
    found = _by_hash.setdefault(hash((type(value), key)), value)
    return found if found is value or (type(found) is type(value) and _share_key(found) == key) else value


_frozen: dict[Any, Any] = {}  # equal tuples/frozensets of one build share one object (cleared per full build)
_by_hash: dict[int, Any] = {}  # equal argument lists and suggestion mappings, by their key's hash (the same)


def forget_shared() -> None:
    """Start sharing afresh (a full build: values of the previous catalog are not kept alive)."""
    _frozen.clear()
    _by_hash.clear()


def _shared(value: Any) -> Any:
    return _frozen.setdefault(value, value)


def _suggestions(listing: Mapping[str, Any], share: bool) -> Mapping[str, Sequence[str]]:
    """Completion's values per argument. A part (`share` false) reads its rows without them
    (`listing_text`), as it answers list pages and reads, never a completion (`Catalog.complete`
    refuses to); what it finds anyway (a listing summarised from its snapshot) it keeps as decoded."""
    found = listing.get("suggestions") or {}
    if not share:
        return found
    return _shared_value({_intern(name): _shared(tuple(values)) for name, values in found.items()})


def decode_listing(text: str | None, share: bool = True) -> dict[str, Any]:
    """The listing column, decoded (read as text: one fast decode per row), with short values
    shared unless `share` is false (a part read for one request: sharing saves a long-lived
    catalog memory, and costs a third of the decoding)."""
    if not text:
        return {}
    decoded = _loads(text)
    if not isinstance(decoded, dict):
        return {}
    return _share(decoded) if share else decoded


def _tags(listing: Mapping[str, Any], share: bool) -> frozenset[str]:
    """Visibility comes from the published version, never from the draft (registry.authoring.snapshots)."""
    tags = frozenset(listing.get("tags") or ())
    return _shared(tags) if share else tags


def fallback_names(label: str) -> list[str]:
    """The label rows `label` serves from: its own, then production's (production alone for production)."""
    return [label, PRODUCTION] if label != PRODUCTION else [PRODUCTION]


def pick_served(rows: Iterable[Any], label: str) -> dict[int, Any]:
    """The label fallback rule: per entry, its row of `label` if present, else its production row.

    `rows` are label rows of `fallback_names(label)` (anything with ``entry_id`` and ``name``).
    The catalog and the consistency check pick with this; the cold pages say the same in SQL
    (registry/serving/pages.py `_served`), and a test holds the three to one answer."""
    chosen: dict[int, Any] = {}
    for row in rows:
        if row.entry_id not in chosen or row.name == label:
            chosen[row.entry_id] = row
    return chosen


def rollout_applies(served_label: str, served_version: int, rollout_label: str, candidate_version: int) -> bool:
    """The rollout rule: a rollout row (matched to the entry by id, never by its `entry_key`, the
    draft's name when it began) runs on the item an entry is served as when it runs on the label
    that item is served from and its candidate is another version. The catalog attaches rollouts
    (registry/serving/catalogs.py) and the consistency check expects them by this one test."""
    return served_label == rollout_label and served_version != candidate_version


def _listing_of(kind: str, row: Row) -> dict[str, Any]:
    """The version's listing column; versions written without one are summarised from the snapshot."""
    if row.listing:
        return row.listing
    snapshot = KINDS[kind].version_model.objects.filter(pk=row.version_id).values_list(
        "snapshot", flat=True).first()
    return listing_of(kind, snapshot or {})


def _prompt_item(row: Row, share: bool = True) -> PromptItem:
    listing = _listing_of("prompt", row)
    suggestions = _suggestions(listing, share)
    item = listing["item"]
    resource_arguments = frozenset(listing.get("resource_arguments") or ())
    if not share:
        return PromptItem(item["name"], _tags(listing, share), row.number, row.name, item, suggestions,
                          row.version_id, resource_arguments=resource_arguments)
    if "arguments" in item:
        item["arguments"] = _shared_value(item["arguments"])
    return PromptItem(item["name"], _tags(listing, share), row.number, _intern(row.name), item, suggestions,
                      row.version_id, resource_arguments=_shared(resource_arguments))


def _resource_item(row: Row, share: bool = True) -> ResourceItem:
    listing = _listing_of("resource", row)
    item = listing["item"]  # decoded for this item alone: completed in place, nothing copied
    uri = lookup_uri(item["uri"])  # versions published before URIs were normalised on save
    item["uri"] = listing["content"]["uri"] = uri if uri != item["uri"] else item["uri"]  # one string for all
    annotations = item.get("annotations") or {}
    annotations["lastModified"] = last_modified(row.created_at)
    item["annotations"] = annotations
    return ResourceItem(item["uri"], _tags(listing, share), row.number, _intern(row.name), item, listing["content"],
                        row.version_id)


def _template_item(row: Row, share: bool = True) -> TemplateItem:
    listing = _listing_of("template", row)
    item = dict(listing["item"])
    item["uriTemplate"] = normalize_uri_template(item["uriTemplate"])
    suggestions = _suggestions(listing, share)
    return TemplateItem(item["uriTemplate"], _tags(listing, share), row.number, _intern(row.name), item,
                        UriTemplateMatcher.build(item["uriTemplate"]), item.get("mimeType", ""), suggestions,
                        row.version_id)


# Each takes (row, share=True): share=False for parts read for one request (see decode_listing).
ITEM_BUILDERS: dict[str, Callable[..., PromptItem | ResourceItem | TemplateItem]] = {
    "prompt": _prompt_item, "resource": _resource_item, "template": _template_item}
