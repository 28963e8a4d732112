"""Read side for MCP: an immutable in-memory index of what one release label serves.

Published versions never change, so a label's catalog is built once from the database and
then answers lists and completions without a query. It holds metadata only (names,
descriptions, argument schemas, URIs, template matchers, content hashes and sizes), read
from each version's small `listing` column (registry/authoring/listing.py), so building it never loads
message bodies or documents and its size does not grow with them. What `prompts/get` and
`resources/read` return is loaded on demand into the one bounded per-process content cache
(registry/storage/cache.py): a hot entry costs no query, a cold one one read. On the event
loop a cold read raises ContentNotLoaded so the caller repeats it in a worker thread. Any committed change
(local or caught up from another process) bumps `changes.generation()`, which retires the
cached catalog; the next request rebuilds it (in the background, registry/serving/warmup.py; list pages are
read from the database meanwhile, registry/serving/pages.py). The catalog for label L serves L's version of
each entry and falls back to `production` where an entry has no L label.

Percentage rollouts (registry/release/rollouts.py): an item whose label runs a rollout carries it
(`item.rollout`: percent + the candidate's own item). A viewer with a client identity whose
stable bucket for the entry is below the percentage is served the candidate; anonymous viewers
always get the label's version. Lists then differ per client: `personalised(viewer)` tells the
endpoint to answer them with cacheScope private, and `variant(viewer)` is the part of a cache
key that tells such clients apart. Without rollouts everything takes the shared fast path.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterable, Mapping, NamedTuple

from django.db.models import Q, TextField
from django.db.models.functions import Cast

from registry import changes
from registry.serving import dynamic
from registry.storage import cache as content_cache
from registry.errors import InvalidArguments, InvalidUri, UnknownPrompt, UnknownResource
from registry.kinds import KINDS
from registry.models import PRODUCTION, PromptLabel, ResourceLabel, ResourceTemplateLabel, Rollout
from registry.formats.rendering import CompiledPrompt, Template, compile_prompt, parse_template, render_compiled
from registry.formats.buckets import gets_candidate
from registry.authoring.listing import listing_of
from registry.authoring.snapshots import canonical_json, materialise, materialise_block, read_content
from registry.formats.uris import UriTemplateMatcher, lookup_uri, normalize_uri_template, validate_uri
from registry.serving.viewer import Viewer, may_differ_by_client, served_item

MAX_COMPLETIONS = 100

try:  # several times faster than the stdlib decoder, and it shares repeated keys
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - orjson is a dependency; the stdlib is the fallback
    _loads = json.loads


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


@dataclass(frozen=True)
class ItemRollout:
    """A running percentage rollout: `candidate` (an item like its owner) for `percent`% of clients."""

    percent: int
    candidate: Any  # PromptItem | ResourceItem | TemplateItem


@dataclass(frozen=True)
class PromptItem:
    name: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    suggestions: Mapping[str, tuple[str, ...]]
    version_id: int = 0  # the version row: what the compiled body is cached and loaded by
    rollout: ItemRollout | None = None
    resource_arguments: frozenset[str] = frozenset()  # arguments whose values are registry resource URIs

    @property
    def key(self) -> str:
        return self.name


@dataclass(frozen=True)
class ResourceItem:
    uri: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    ref: Mapping[str, Any]  # {uri, mimeType, sha256, size, encoding}: where the bytes are, not the bytes
    version_id: int = 0
    rollout: ItemRollout | None = None

    @property
    def key(self) -> str:
        return self.uri


@dataclass(frozen=True)
class TemplateItem:
    uri_template: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    matcher: UriTemplateMatcher
    mime_type: str
    suggestions: Mapping[str, tuple[str, ...]]
    version_id: int = 0
    rollout: ItemRollout | None = None

    @property
    def key(self) -> str:
        return self.uri_template


class ContentNotLoaded(Exception):
    """Content is not in the cache and the caller runs on the event loop: retry in a worker thread.

    Loading needs a database or storage read, which must not block (or, for the ORM, even run
    on) the event loop; the MCP handlers catch this and run the same call off the loop.
    """


class _Row(NamedTuple):
    entry_id: int
    name: str  # the label the row is served from
    version_id: int
    number: int
    listing: dict[str, Any]
    created_at: Any


_ROW_FIELDS = ("entry_id", "name", "version_id", "version__number", "listing_text", "version__created_at")
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


_frozen: dict[Any, Any] = {}  # equal tuples/frozensets of one build share one object (cleared per full build)


def _shared(value: Any) -> Any:
    return _frozen.setdefault(value, value)


def _suggestions(listing: Mapping[str, Any]) -> dict[str, tuple[str, ...]]:
    return {_intern(name): _shared(tuple(values)) for name, values in (listing.get("suggestions") or {}).items()}


def _decode_listing(text: str | None) -> dict[str, Any]:
    """The listing column, decoded with short values shared (read as text: one fast decode per row)."""
    if not text:
        return {}
    decoded = _loads(text)
    return _share(decoded) if isinstance(decoded, dict) else {}


def _tags(listing: Mapping[str, Any]) -> frozenset[str]:
    """Visibility comes from the published version, never from the draft (registry.authoring.snapshots)."""
    return _shared(frozenset(listing.get("tags") or ()))


def pick_served(rows: Iterable[Any], label: str) -> dict[int, Any]:
    """The label fallback rule: per entry, its row of `label` if present, else its production row.

    `rows` are label rows of `label` and production (anything with ``entry_id`` and ``name``).
    The catalog and the consistency check pick with this; the cold pages say the same in SQL
    (catalog_pages._served), and a test holds the three to one answer."""
    chosen: dict[int, Any] = {}
    for row in rows:
        if row.entry_id not in chosen or row.name == label:
            chosen[row.entry_id] = row
    return chosen


def _listing_of(kind: str, row: _Row) -> dict[str, Any]:
    """The version's listing column; versions written without one are summarised from the snapshot."""
    if row.listing:
        return row.listing
    snapshot = KINDS[kind].version_model.objects.filter(pk=row.version_id).values_list(  # type: ignore[attr-defined]
        "snapshot", flat=True).first()
    return listing_of(kind, snapshot or {})


def _prompt_item(row: _Row) -> PromptItem:
    listing = _listing_of("prompt", row)
    suggestions = _suggestions(listing)
    item = listing["item"]
    return PromptItem(item["name"], _tags(listing), row.number, row.name, item, suggestions, row.version_id,
                      resource_arguments=_shared(frozenset(listing.get("resource_arguments") or ())))


def _resource_item(row: _Row) -> ResourceItem:
    listing = _listing_of("resource", row)
    item = dict(listing["item"])
    item["uri"] = lookup_uri(item["uri"])  # versions published before URIs were normalised on save
    listing["content"]["uri"] = item["uri"]  # one string for both
    annotations = dict(item.get("annotations") or {})
    annotations["lastModified"] = row.created_at.isoformat().replace("+00:00", "Z")
    item["annotations"] = annotations
    return ResourceItem(item["uri"], _tags(listing), row.number, row.name, item, listing["content"], row.version_id)


def _template_item(row: _Row) -> TemplateItem:
    listing = _listing_of("template", row)
    item = dict(listing["item"])
    item["uriTemplate"] = normalize_uri_template(item["uriTemplate"])
    suggestions = _suggestions(listing)
    return TemplateItem(item["uriTemplate"], _tags(listing), row.number, row.name, item,
                        UriTemplateMatcher.build(item["uriTemplate"]), item.get("mimeType", ""), suggestions,
                        row.version_id)


# ---------------------------------------------------------------------------------- content on demand
def _in_event_loop() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _cached(key: tuple[Any, ...], load: Callable[[], tuple[Any, int]]) -> Any:
    """From the shared content cache, loading on a miss (never on the event loop: ContentNotLoaded)."""
    value = content_cache.cache.get(key)
    if value is not None:
        return value
    if _in_event_loop():
        raise ContentNotLoaded(key)
    return content_cache.cache.get_or_load(key, load)


def _snapshot(kind: str, version_id: int) -> dict[str, Any]:
    snapshot = KINDS[kind].version_model.objects.filter(pk=version_id).values_list(  # type: ignore[attr-defined]
        "snapshot", flat=True).first()
    if snapshot is None:
        raise UnknownPrompt(f"version {version_id}") if kind == "prompt" else UnknownResource(f"version {version_id}")
    return snapshot


def _load_compiled(version_id: int) -> tuple[CompiledPrompt, int]:
    snapshot = _snapshot("prompt", version_id)
    return compile_prompt(snapshot), len(canonical_json(snapshot))


def _load_body(version_id: int) -> tuple[Template, int]:
    body = _snapshot("template", version_id).get("body", "")
    return parse_template(body), len(body) + 64


def _load_stored(sha256: str, encoding: str) -> str:
    return _cached(("bytes", sha256, encoding), lambda: _sized(read_content(sha256, encoding)))


def _sized(value: str) -> tuple[str, int]:
    return value, len(value) + 64


def _fill(block: Mapping[str, Any]) -> dict[str, Any]:
    return materialise_block(block, _load_stored)


def _complete_from(pool: Iterable[str], value: str) -> dict[str, Any]:
    prefix = (value or "").lower()
    seen: dict[str, None] = {}
    for candidate in pool:
        if candidate.lower().startswith(prefix):
            seen.setdefault(candidate, None)
    matches = list(seen)
    return {"values": matches[:MAX_COMPLETIONS], "total": len(matches), "hasMore": len(matches) > MAX_COMPLETIONS}


@dataclass
class Catalog:
    label: str
    generation: int
    prompt_items: dict[str, PromptItem]
    resource_items: dict[str, ResourceItem]
    template_items: list[TemplateItem]
    _lists: dict[tuple[str, frozenset[str]], list[dict[str, Any]]] = field(default_factory=dict)
    rolled_out: tuple[Any, ...] = ()  # the items with a running rollout
    partial: bool = False  # holds only some entries (read_entries): answers one list page, never cached

    # ---------------------------------------------------------------- rollouts
    def personalised(self, viewer: Viewer) -> bool:
        """Whether this viewer's results may differ from other viewers' with the same label and scope."""
        return bool(viewer.client_name) and any(may_differ_by_client(item, viewer) for item in self.rolled_out)

    def variant(self, viewer: Viewer) -> tuple[str, ...]:
        """Keys of the rolled-out entries this viewer gets the candidate of: add it to per-viewer cache keys."""
        if not viewer.client_name:
            return ()
        return tuple(f"{item.key}@v{item.rollout.candidate.version}" for item in self.rolled_out
                     if may_differ_by_client(item, viewer)
                     and gets_candidate(viewer.client_name, item.key, item.rollout.percent))

    def served_to(self, viewer: Viewer) -> list[dict[str, Any]]:
        """Which version of each visible entry this viewer is served now (for the admin's client page)."""
        rows = []
        for kind, items in (("prompt", (self.prompt_items[k] for k in sorted(self.prompt_items))),
                            ("resource", (self.resource_items[k] for k in sorted(self.resource_items))),
                            ("template", iter(self.template_items))):
            for item in items:
                served = served_item(item, viewer)
                if served is None:
                    continue
                rows.append({
                    "kind": kind, "key": item.key, "version": served.version, "label": item.label,
                    "label_version": item.version, "in_rollout": served is not item,
                    "rollout": f"v{item.rollout.candidate.version} to {item.rollout.percent}%" if item.rollout else "",
                })
        return rows

    # ---------------------------------------------------------------- lists
    def _list(self, kind: str, viewer: Viewer, items: Iterable[Any]) -> list[dict[str, Any]]:
        if self.rolled_out and self.personalised(viewer):
            return [served.listing for served in (served_item(item, viewer) for item in items) if served is not None]
        key = (kind, viewer.scope_tags)
        cached = self._lists.get(key)
        if cached is None:
            # Anonymous, or no rollout this viewer could see: served_item is the label's version.
            cached = self._with_dynamic(kind, [item.listing for item in items if viewer.sees(item.tags)])
            self._lists[key] = cached
        return cached

    def _with_dynamic(self, kind: str, listed: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The built-in dynamic resources join every viewer's lists (their content is scoped, not their
        existence); a stored resource of the same URI wins."""
        if kind == "resources":
            extra = [p.listing for p in dynamic.fixed() if p.uri not in self.resource_items]
            return sorted(listed + extra, key=lambda item: item["uri"]) if extra else listed
        if kind == "templates":
            taken = {t.uri_template for t in self.template_items}
            return listed + [p.listing for p in dynamic.templates() if p.uri not in taken]
        return listed

    def prompts(self, viewer: Viewer) -> list[dict[str, Any]]:
        return self._list("prompts", viewer, (self.prompt_items[k] for k in sorted(self.prompt_items)))

    def resources(self, viewer: Viewer) -> list[dict[str, Any]]:
        if self.rolled_out and self.personalised(viewer):
            return self._with_dynamic("resources", self._list("resources", viewer, (
                self.resource_items[k] for k in sorted(self.resource_items))))
        return self._list("resources", viewer, (self.resource_items[k] for k in sorted(self.resource_items)))

    def templates(self, viewer: Viewer) -> list[dict[str, Any]]:
        if self.rolled_out and self.personalised(viewer):
            return self._with_dynamic("templates", self._list("templates", viewer, self.template_items))
        return self._list("templates", viewer, self.template_items)

    # ---------------------------------------------------------------- single entries
    def prompt(self, viewer: Viewer, name: str) -> PromptItem:
        item = served_item(self.prompt_items.get(name) if isinstance(name, str) else None, viewer)
        if item is None:
            raise UnknownPrompt(str(name))
        return item

    def get_prompt(self, viewer: Viewer, name: str, arguments: Mapping[str, Any] | None) -> Served:
        item = self.prompt(viewer, name)
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InvalidArguments("Prompt arguments must be an object mapping names to strings.")
        compiled = _cached(("prompt", item.version_id), lambda: _load_compiled(item.version_id))
        is_resource = (lambda uri: self.readable(viewer, uri)) if item.resource_arguments else None
        return Served(render_compiled(compiled, arguments, _fill, is_resource), "prompt", item.name, item.version,
                      item.label)

    def argument_specs(self, viewer: Viewer, name: str) -> tuple[Mapping[str, Any], ...]:
        """The served version's argument specs (types, bounds): what an input-required form asks for."""
        item = self.prompt(viewer, name)
        return tuple(_cached(("prompt", item.version_id), lambda: _load_compiled(item.version_id)).arguments)

    def readable(self, viewer: Viewer, uri: str) -> bool:
        """Whether `resources/read` of `uri` would succeed for this viewer (a resource or a template
        match); judged on the metadata alone, so it loads no content."""
        if not isinstance(uri, str):
            return False
        if served_item(self.resource_items.get(uri) or self.resource_items.get(lookup_uri(uri)), viewer) is not None:
            return True
        try:
            validate_uri(uri)
            key = lookup_uri(uri)
            provided = self._dynamic(key)
            if provided is not None:
                return provided[0].exists(self, viewer, provided[1])
            for template in self.template_items:
                served = served_item(template, viewer)
                if served is not None and served.matcher.match(key) is not None:
                    return True
        except (InvalidUri, InvalidArguments):
            return False
        return False

    def _resource_uris(self, viewer: Viewer) -> list[str]:
        return [uri for uri in sorted(self.resource_items) if served_item(self.resource_items[uri], viewer) is not None]

    def read_resource(self, viewer: Viewer, uri: str) -> Served:
        if not isinstance(uri, str):
            raise InvalidArguments("The resource URI must be a string.")
        item = self.resource_items.get(uri)
        if item is None:
            uri = lookup_uri(uri)  # another spelling of a stored URI (case, escapes, an IRI's raw characters)
            item = self.resource_items.get(uri)
        item = served_item(item, viewer)
        if item is not None:
            return Served({"contents": [materialise(item.ref, _load_stored)]}, "resource", uri, item.version,
                          item.label)
        validate_uri(uri)
        found = self._dynamic(uri)
        if found is not None:
            return self._read_dynamic(viewer, uri, *found)
        for listed in self.template_items:
            template = served_item(listed, viewer)
            if template is None:
                continue
            variables = template.matcher.match(uri)
            if variables is None:
                continue
            content: dict[str, Any] = {"uri": uri}
            if template.mime_type:
                content["mimeType"] = template.mime_type
            body = _cached(("template", template.version_id), lambda t=template: _load_body(t.version_id))
            content["text"] = body.render(variables)
            return Served({"contents": [content]}, "template", template.uri_template, template.version, template.label)
        raise UnknownResource(uri)

    def _dynamic(self, uri: str) -> tuple[dynamic.Provider, dict[str, str]] | None:
        """The provider serving `uri`, unless a stored template of the same URI template takes its place."""
        found = dynamic.find(uri)
        if found is not None and found[0].templated and any(t.uri_template == found[0].uri
                                                            for t in self.template_items):
            return None
        return found

    def _read_dynamic(self, viewer: Viewer, uri: str, provider: dynamic.Provider,
                      variables: dict[str, str]) -> Served:
        """A provider's contents, computed once per catalog generation, label, scope and rollout variant
        (then cached): a change log lists the rollout candidate only to the clients that get it."""
        key = ("dynamic", self.generation, self.label, viewer.scope_tags, self.variant(viewer), uri)

        def load() -> tuple[list[dict[str, Any]], int]:
            contents = provider.render(self, viewer, variables, uri)
            return contents, sum(len(c.get("text") or "") for c in contents) + 64

        contents = _cached(key, load)
        return Served({"contents": [dict(c) for c in contents]}, "dynamic", provider.uri, self.generation, self.label,
                      ttl_ms=provider.ttl_ms, cache_scope=provider.cache_scope, counted=False)

    def template(self, viewer: Viewer, uri_template: str) -> TemplateItem | None:
        for item in self.template_items:
            if item.uri_template == uri_template:
                return served_item(item, viewer)
        return None

    # ---------------------------------------------------------------- completion
    def complete(
        self, viewer: Viewer, ref: Mapping[str, Any], argument_name: str, value: str,
        context: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        ref_type = ref.get("type") if isinstance(ref, Mapping) else None
        if not isinstance(argument_name, str) or not isinstance(value, str):
            raise InvalidArguments("completion/complete needs argument.name and argument.value as strings.")
        if ref_type == "ref/prompt":
            item = self.prompt(viewer, ref.get("name", ""))
            if argument_name not in item.suggestions:
                raise InvalidArguments(f"Prompt {item.name!r} has no argument {argument_name!r}.")
            offered = list(item.suggestions[argument_name])
            if argument_name in item.resource_arguments:
                offered += self._resource_uris(viewer)
            return _complete_from(offered, value)
        if ref_type == "ref/resource":
            uri = ref.get("uri", "")
            template = self.template(viewer, normalize_uri_template(uri) if isinstance(uri, str) else uri)
            if template is None and isinstance(uri, str):
                provided = dynamic.template(normalize_uri_template(uri))
                if provided is not None:
                    return _complete_from(provided.suggest(self, viewer, argument_name) if provided.suggest else (),
                                          value)
            if template is None:
                resource = self.resource_items.get(lookup_uri(uri) if isinstance(uri, str) else uri)
                if served_item(resource, viewer) is not None:
                    return _complete_from((), value)
                raise UnknownResource(str(uri))
            pool = list(template.suggestions.get(argument_name, ()))
            for resource_uri, resource in self.resource_items.items():
                if served_item(resource, viewer) is not None:  # a resource's URI is the same in every version
                    try:
                        found = template.matcher.match(resource_uri)
                    except Exception:
                        found = None
                    if found and argument_name in found:
                        pool.append(found[argument_name])
            return _complete_from(pool, value)
        raise InvalidArguments("completion/complete needs ref.type 'ref/prompt' or 'ref/resource'.")


_cache: dict[str, Catalog] = {}
_build_lock = threading.Lock()
_building: set[str] = set()  # the label whose catalog is being built or refreshed (under _build_lock)


def cached_catalog(label: str) -> Catalog | None:
    """The current catalog for `label` if it is fresh; never touches the database."""
    catalog = _cache.get(label)
    if catalog is not None and catalog.generation == changes.generation():
        return catalog
    return None


def load_catalog(label: str) -> Catalog:
    """Build (or reuse) the catalog for `label` from the database. Call from a sync context."""
    with _build_lock:
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
    with _build_lock:
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
    return catalog


def read_entries(label: str, entry_ids: Mapping[str, Iterable[int] | None]) -> Catalog:
    """A catalog of `label` holding only the given entries of each kind (None: every entry of that
    kind; a kind left out: none), plus every entry with a running rollout on the label, so that
    `personalised()` and `variant()` answer as the whole catalog would. Never cached: it answers
    one request while the whole catalog warms up (registry/serving/pages.py)."""
    return _read(label, None, None, entry_ids)


def _read(label: str, base: Catalog | None, changed: list[tuple[str, str]] | None,
          entry_ids: Mapping[str, Iterable[int] | None] | None = None) -> Catalog:
    """The catalog built from the database: all of it (no base), `base` with the `changed` keys
    re-read, or (entry_ids) just those entries. The same row rules serve all three."""
    generation = changes.generation()
    names = [label, PRODUCTION] if label != PRODUCTION else [PRODUCTION]
    wanted: dict[str, set[str]] = {}
    for kind, key in changed or ():
        wanted.setdefault(kind, set()).add(key)
    partial = entry_ids is not None
    if partial:
        rolled = rollout_entries(names)
        entry_ids = {kind: None if ids is None else sorted(set(ids) | rolled.get(kind, set()))
                     for kind, ids in {**{k: () for k in rolled}, **entry_ids}.items()}
    elif base is None:
        _frozen.clear()

    def rows(model: Any, kind: str) -> Iterable[_Row]:
        qs = model.objects.filter(name__in=names, entry__archived_at__isnull=True)
        if base is not None:
            qs = qs.filter(**{_KEY_FIELDS[kind]: sorted(wanted.get(kind, ()))})
        if partial and entry_ids[kind] is not None:
            qs = qs.filter(entry_id__in=entry_ids[kind])
        qs = qs.annotate(listing_text=Cast("version__listing", output_field=TextField()))
        if kind != "resource":  # only resources list a date; converting 20k of them costs a quarter second
            return (_Row(*values[:4], _decode_listing(values[4]), None) for values in qs.order_by(
                "entry_id", "name").values_list(*_ROW_FIELDS[:5]).iterator(chunk_size=2000))
        return (_Row(*values[:4], _decode_listing(values[4]), values[5])
                for values in qs.order_by("entry_id", "name").values_list(*_ROW_FIELDS).iterator(chunk_size=2000))

    def reads(kind: str) -> bool:
        return kind in entry_ids if partial else base is None or kind in wanted

    prompts = dict(base.prompt_items) if base else {}
    resources = dict(base.resource_items) if base else {}
    templates = {t.uri_template: t for t in base.template_items} if base else {}
    read_keys: dict[str, dict[int, str]] = {}  # kind -> entry id -> the key its item is served under

    def items(kind: str, model: Any) -> Iterable[tuple[str, Any]]:
        keys = read_keys.setdefault(kind, {})
        for row in pick_served(rows(model, kind), label).values():
            item = _ITEM_BUILDERS[kind](row)
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
    if base is None or wanted:
        _attach_rollouts(names, read_keys, base is not None, prompts, resources, templates)
    rolled_out = tuple(item for pool in (prompts, resources, templates) for item in pool.values()
                       if item.rollout is not None)
    return Catalog(label, generation, prompts, resources, sorted(templates.values(), key=lambda t: t.uri_template),
                   rolled_out=rolled_out, partial=partial)


def rollout_entries(names: list[str]) -> dict[str, set[int]]:
    """Per kind, the entries with a rollout running on one of `names` (one small query)."""
    out: dict[str, set[int]] = {}
    for kind, entry_id in Rollout.objects.filter(label__in=names).values_list("entry_kind", "entry_id"):
        out.setdefault(kind, set()).add(entry_id)
    return out


_ITEM_BUILDERS = {"prompt": _prompt_item, "resource": _resource_item, "template": _template_item}


def _attach_rollouts(names: list[str], read_keys: dict[str, dict[int, str]], only_read: bool,
                     *pools: dict[str, Any]) -> None:
    """Give each item just read the rollout running on the label it is served from; one query if none run.

    Matched by entry id: a rollout row names the entry by its draft key when the rollout began, which
    differs from the key the label serves once the draft is renamed. `only_read`: a refresh, which
    asks only about the entries it re-read (few)."""
    rows = Rollout.objects.filter(label__in=names)
    if only_read:
        wanted = Q()
        for kind, keys in read_keys.items():
            if keys:
                wanted |= Q(entry_kind=kind, entry_id__in=sorted(keys))
        if not wanted:
            return
        rows = rows.filter(wanted)
    by_kind = dict(zip(("prompt", "resource", "template"), pools))
    for rollout in rows:
        pool = by_kind.get(rollout.entry_kind)
        key = read_keys.get(rollout.entry_kind, {}).get(rollout.entry_id)
        item = pool.get(key) if pool is not None and key is not None else None
        if item is None or item.label != rollout.label or item.version == rollout.candidate_version:
            continue
        kind = KINDS[rollout.entry_kind]
        found = kind.version_model.objects.filter(  # type: ignore[attr-defined]
            entry_id=rollout.entry_id, number=rollout.candidate_version).values_list(
            "entry_id", "id", "number", "listing", "created_at").first()
        if found is None:
            continue
        entry_id, version_id, number, listing, created_at = found
        candidate = _ITEM_BUILDERS[rollout.entry_kind](_Row(entry_id, rollout.label, version_id, number, listing,
                                                            created_at))
        pool[key] = replace(item, rollout=ItemRollout(rollout.percent, candidate))


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
    with _build_lock:
        _cache.clear()


def catalog_for(label: str) -> Catalog:
    return cached_catalog(label) or load_catalog(label)
