"""Read side for MCP: an immutable in-memory snapshot of what one release label serves.

Published versions never change, so a label's catalog is built once from the database and
then answers lists, reads, renders and completions without a query. Any committed change
(local or caught up from another process) bumps `changes.generation()`, which retires the
cached catalog; the next request rebuilds it. The catalog for label L serves L's version of
each entry and falls back to `production` where an entry has no L label.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from registry import changes
from registry.errors import InvalidArguments, UnknownPrompt, UnknownResource
from registry.models import PRODUCTION, PromptLabel, ResourceLabel, ResourceTemplateLabel
from registry.rendering import CompiledPrompt, Template, compile_prompt, parse_template, render_compiled
from registry.snapshots import resource_content
from registry.uris import UriTemplateMatcher, validate_uri

MAX_COMPLETIONS = 100


@dataclass(frozen=True)
class Viewer:
    """Who is reading: decides the label served and which entries are visible."""

    label: str = PRODUCTION
    scope_tags: frozenset[str] = frozenset()  # empty: sees everything
    client_id: int | None = None
    client_name: str = ""

    def sees(self, tags: frozenset[str]) -> bool:
        return not self.scope_tags or bool(self.scope_tags & tags)


@dataclass(frozen=True)
class Served:
    """A rendered result plus which version produced it, for per-client fetch counting."""

    result: dict[str, Any]
    kind: str
    key: str
    version: int
    label: str


@dataclass(frozen=True)
class PromptItem:
    name: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    compiled: CompiledPrompt
    suggestions: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class ResourceItem:
    uri: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    content: dict[str, Any]


@dataclass(frozen=True)
class TemplateItem:
    uri_template: str
    tags: frozenset[str]
    version: int
    label: str
    listing: dict[str, Any]
    matcher: UriTemplateMatcher
    body: Template
    mime_type: str
    suggestions: Mapping[str, tuple[str, ...]]


def _tags(text: str) -> frozenset[str]:
    return frozenset(t.strip().lower() for t in text.split(",") if t.strip())


def _pick(rows: Iterable[Any], label: str) -> dict[int, Any]:
    """Per entry, the row of `label` if present, else the production row."""
    chosen: dict[int, Any] = {}
    for row in rows:
        if row.entry_id not in chosen or row.name == label:
            chosen[row.entry_id] = row
    return chosen


def _listing(snapshot: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: snapshot[k] for k in keys if k in snapshot and snapshot[k] not in ("", None, {}, [])}


def _prompt_item(row: Any) -> PromptItem:
    snap = row.version.snapshot
    listing = _listing(snap, ("name", "title", "description"))
    listing["arguments"] = [
        _listing(a, ("name", "title", "description")) | {"required": bool(a.get("required"))}
        for a in snap.get("arguments", [])
    ]
    suggestions = {a["name"]: tuple(a.get("suggestions", ())) for a in snap.get("arguments", [])}
    return PromptItem(snap["name"], _tags(row.entry.tags), row.version.number, row.name, listing,
                      compile_prompt(snap), suggestions)


def _annotations(snap: Mapping[str, Any], published_at: Any) -> dict[str, Any]:
    annotations = dict(snap.get("annotations") or {})
    annotations["lastModified"] = published_at.isoformat().replace("+00:00", "Z")
    return annotations


def _resource_item(row: Any) -> ResourceItem:
    snap = row.version.snapshot
    listing = _listing(snap, ("uri", "name", "title", "description", "mimeType", "size"))
    listing["annotations"] = _annotations(snap, row.version.created_at)
    return ResourceItem(snap["uri"], _tags(row.entry.tags), row.version.number, row.name, listing,
                        resource_content(snap))


def _template_item(row: Any) -> TemplateItem:
    snap = row.version.snapshot
    listing = _listing(snap, ("uriTemplate", "name", "title", "description", "mimeType"))
    if snap.get("annotations"):
        listing["annotations"] = dict(snap["annotations"])
    suggestions = {v["name"]: tuple(v.get("suggestions", ())) for v in snap.get("variables", [])}
    return TemplateItem(snap["uriTemplate"], _tags(row.entry.tags), row.version.number, row.name, listing,
                        UriTemplateMatcher.build(snap["uriTemplate"]), parse_template(snap.get("body", "")),
                        snap.get("mimeType", ""), suggestions)


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

    # ---------------------------------------------------------------- lists
    def _list(self, kind: str, viewer: Viewer, items: Iterable[Any]) -> list[dict[str, Any]]:
        key = (kind, viewer.scope_tags)
        cached = self._lists.get(key)
        if cached is None:
            cached = [item.listing for item in items if viewer.sees(item.tags)]
            self._lists[key] = cached
        return cached

    def prompts(self, viewer: Viewer) -> list[dict[str, Any]]:
        return self._list("prompts", viewer, (self.prompt_items[k] for k in sorted(self.prompt_items)))

    def resources(self, viewer: Viewer) -> list[dict[str, Any]]:
        return self._list("resources", viewer, (self.resource_items[k] for k in sorted(self.resource_items)))

    def templates(self, viewer: Viewer) -> list[dict[str, Any]]:
        return self._list("templates", viewer, self.template_items)

    # ---------------------------------------------------------------- single entries
    def prompt(self, viewer: Viewer, name: str) -> PromptItem:
        item = self.prompt_items.get(name) if isinstance(name, str) else None
        if item is None or not viewer.sees(item.tags):
            raise UnknownPrompt(str(name))
        return item

    def get_prompt(self, viewer: Viewer, name: str, arguments: Mapping[str, Any] | None) -> Served:
        item = self.prompt(viewer, name)
        if arguments is not None and not isinstance(arguments, Mapping):
            raise InvalidArguments("Prompt arguments must be an object mapping names to strings.")
        return Served(render_compiled(item.compiled, arguments), "prompt", item.name, item.version, item.label)

    def read_resource(self, viewer: Viewer, uri: str) -> Served:
        if not isinstance(uri, str):
            raise InvalidArguments("The resource URI must be a string.")
        item = self.resource_items.get(uri)
        if item is not None and viewer.sees(item.tags):
            return Served({"contents": [item.content]}, "resource", uri, item.version, item.label)
        validate_uri(uri)
        for template in self.template_items:
            if not viewer.sees(template.tags):
                continue
            variables = template.matcher.match(uri)
            if variables is None:
                continue
            content: dict[str, Any] = {"uri": uri}
            if template.mime_type:
                content["mimeType"] = template.mime_type
            content["text"] = template.body.render(variables)
            return Served({"contents": [content]}, "template", template.uri_template, template.version, template.label)
        raise UnknownResource(uri)

    def template(self, viewer: Viewer, uri_template: str) -> TemplateItem | None:
        for item in self.template_items:
            if item.uri_template == uri_template and viewer.sees(item.tags):
                return item
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
            return _complete_from(item.suggestions[argument_name], value)
        if ref_type == "ref/resource":
            uri = ref.get("uri", "")
            template = self.template(viewer, uri)
            if template is None:
                if uri in self.resource_items:
                    return _complete_from((), value)
                raise UnknownResource(str(uri))
            pool = list(template.suggestions.get(argument_name, ()))
            for resource_uri, resource in self.resource_items.items():
                if viewer.sees(resource.tags):
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
    generation = changes.generation()
    names = [label, PRODUCTION] if label != PRODUCTION else [PRODUCTION]
    wanted: dict[str, set[str]] = {}
    for kind, key in changed or ():
        wanted.setdefault(kind, set()).add(key)

    def rows(model: Any, kind: str) -> list[Any]:
        qs = model.objects.filter(name__in=names, entry__archived_at__isnull=True)
        if base is not None:
            qs = qs.filter(**{_KEY_FIELDS[kind]: sorted(wanted.get(kind, ()))})
        return list(qs.select_related("version", "entry").order_by("entry_id", "name"))

    prompts = dict(base.prompt_items) if base else {}
    resources = dict(base.resource_items) if base else {}
    templates = {t.uri_template: t for t in base.template_items} if base else {}
    if base is None or "prompt" in wanted:
        for key in wanted.get("prompt", ()):
            prompts.pop(key, None)
        prompts.update((i.name, i) for i in map(_prompt_item, _pick(rows(PromptLabel, "prompt"), label).values()))
    if base is None or "resource" in wanted:
        for key in wanted.get("resource", ()):
            resources.pop(key, None)
        resources.update((i.uri, i) for i in map(_resource_item, _pick(rows(ResourceLabel, "resource"), label).values()))
    if base is None or "template" in wanted:
        for key in wanted.get("template", ()):
            templates.pop(key, None)
        templates.update(
            (i.uri_template, i) for i in map(_template_item, _pick(rows(ResourceTemplateLabel, "template"), label).values())
        )
    catalog = Catalog(label, generation, prompts, resources, sorted(templates.values(), key=lambda t: t.uri_template))
    _cache[label] = catalog
    return catalog


def catalog_for(label: str) -> Catalog:
    return cached_catalog(label) or load_catalog(label)
