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

Composed entries (texts with `{{> snippet }}` references, registry/serving/composed.py) are served
fully expanded: an item with includes carries its `parts` (the snippet versions its following
references resolve to on the label it is served from), and its compiled prompt (the texts of the
registry resources it embeds expanded with the same parts), template body or expanded resource
text is cached by version and parts, so a snippet release is a new cache entry and a plain
entry's key is as before.

Percentage rollouts (registry/release/rollouts.py): an item whose label runs a rollout carries it
(`item.rollout`: percent + the candidate's own item). A viewer with a client identity whose
stable bucket for the entry is below the percentage is served the candidate; anonymous viewers
always get the label's version. Lists then differ per client: `personalised(viewer)` tells the
endpoint to answer them with cacheScope private, and `variant(viewer)` is the part of a cache
key that tells such clients apart. Without rollouts everything takes the shared fast path.
A snippet's rollout is carried by each entry that follows it on the rolled-out label (the same
version with the snippet's candidate expanded, bucketed by the snippet's name): it changes
texts, never listings, so lists stay shared (`texts=False`) while reads are personalised.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from registry.authoring.snapshots import canonical_json, materialise, materialise_block, read_content
from registry.errors import InvalidArguments, InvalidUri, UnknownPrompt, UnknownResource
from registry.formats.rendering import CompiledPrompt, Template, compile_prompt, parse_template, render_compiled
from registry.formats.uris import lookup_uri, normalize_uri_template, validate_uri
from registry.kinds import KINDS
from registry.serving import dynamic
from registry.serving.composed import Parts, expanded, expanded_prompt, resolver, snippet_text
from registry.serving.items import PromptItem, ResourceItem, Served, TemplateItem
from registry.serving.viewer import Viewer, in_bucket, may_differ_by_client, served_item
from registry.storage import cache as content_cache

MAX_COMPLETIONS = 100


class ContentNotLoaded(Exception):
    """Content is not in the cache and the caller runs on the event loop: retry in a worker thread.

    Loading needs a database or storage read, which must not block (or, for the ORM, even run
    on) the event loop; the MCP handlers catch this and run the same call off the loop.
    """


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
    snapshot = KINDS[kind].version_model.objects.filter(pk=version_id).values_list(
        "snapshot", flat=True).first()
    if snapshot is None:
        raise UnknownPrompt(f"version {version_id}") if kind == "prompt" else UnknownResource(f"version {version_id}")
    return snapshot


def _load_compiled(version_id: int, parts: Parts | None = None) -> tuple[CompiledPrompt, int]:
    snapshot = _snapshot("prompt", version_id)
    if parts is not None:  # references expanded before placeholders are parsed: one pass for arguments
        # (the texts of the resources it embeds too: kept expanded in the compiled version, by its parts)
        snapshot = expanded_prompt(snapshot, _resolver(parts), _load_stored)
    return compile_prompt(snapshot), len(canonical_json(snapshot))


def _load_body(version_id: int, parts: Parts | None = None) -> tuple[Template, int]:
    body = _snapshot("template", version_id).get("body", "")
    if parts is not None:
        body = expanded(body, _resolver(parts))
    return parse_template(body), len(body) + 64


def _snippet_text(name: str, number: int) -> str | None:
    """A snippet version's text, from the content cache (a one-tuple, so that 'no such version' is kept too)."""
    found = _cached(("snippet", name, number), lambda: ((snippet_text(name, number),), 64 + len(name) * 2))
    return found[0]


def _resolver(parts: Parts) -> Any:
    return resolver(parts, _snippet_text)


def _compiled(item: PromptItem) -> CompiledPrompt:
    """The item's compiled version; a composed item's is keyed by its parts too (what it expands to)."""
    if not item.composed:
        return _cached(("prompt", item.version_id), lambda: _load_compiled(item.version_id))
    return _cached(("prompt", item.version_id, item.parts), lambda: _load_compiled(item.version_id, item.parts))


def _body(template: TemplateItem) -> Template:
    if not template.composed:
        return _cached(("template", template.version_id), functools.partial(_load_body, template.version_id))
    return _cached(("template", template.version_id, template.parts),
                   functools.partial(_load_body, template.version_id, template.parts))


def _resource_content(item: ResourceItem) -> dict[str, Any]:
    """What `resources/read` returns of a stored resource: a composed text resource's text expanded
    (kept in the content cache by version and parts)."""
    if not item.composed:
        return materialise(item.ref, _load_stored)

    def load() -> tuple[dict[str, Any], int]:
        content = materialise(item.ref, _load_stored)
        if "text" in content:
            content["text"] = expanded(content["text"], _resolver(item.parts))
        return content, len(content.get("text") or content.get("blob") or "") + 64

    return dict(_cached(("resource", item.version_id, item.parts), load))


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
    rolled_out: tuple[Any, ...] = ()  # the items with a running rollout (their own or a snippet's)
    # The snippet rollouts its items carry: (snippet name, label row, candidate version, percent).
    snippet_rollouts: tuple[tuple[str, str, int, int], ...] = ()
    partial: bool = False  # holds only some entries (read_entries): answers one list page, never cached
    snippets: Any = None  # the SnippetMaps its composed items were resolved from (None: none read)

    # ---------------------------------------------------------------- rollouts
    def _rolled_out(self, texts: bool) -> Iterable[Any]:
        """The rolled-out items; `texts=False`: only those whose listing may differ (an entry's own
        rollout: a snippet's changes texts alone)."""
        return self.rolled_out if texts else (item for item in self.rolled_out if not item.rollout.snippet)

    def personalised(self, viewer: Viewer, *, texts: bool = True) -> bool:
        """Whether this viewer's results (`texts=False`: its lists) may differ from other viewers'
        with the same label and scope."""
        return bool(viewer.client_name) and any(may_differ_by_client(item, viewer)
                                                for item in self._rolled_out(texts))

    def variant(self, viewer: Viewer, *, texts: bool = True) -> tuple[str, ...]:
        """Keys of the rolled-out entries this viewer gets the candidate of: add it to per-viewer cache keys."""
        if not viewer.client_name:
            return ()
        return tuple(f"{item.key}@{item.rollout.tag}" for item in self._rolled_out(texts)
                     if may_differ_by_client(item, viewer) and in_bucket(item, viewer))

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
                    "rollout": f"{item.rollout.tag} to {item.rollout.percent}%" if item.rollout else "",
                })
        return rows

    # ---------------------------------------------------------------- lists
    def _list(self, kind: str, viewer: Viewer, items: Iterable[Any]) -> list[dict[str, Any]]:
        if self.rolled_out and self.personalised(viewer, texts=False):
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
        if self.rolled_out and self.personalised(viewer, texts=False):
            return self._with_dynamic("resources", self._list("resources", viewer, (
                self.resource_items[k] for k in sorted(self.resource_items))))
        return self._list("resources", viewer, (self.resource_items[k] for k in sorted(self.resource_items)))

    def templates(self, viewer: Viewer) -> list[dict[str, Any]]:
        if self.rolled_out and self.personalised(viewer, texts=False):
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
        compiled = _compiled(item)
        is_resource = (lambda uri: self.readable(viewer, uri)) if item.resource_arguments else None
        return Served(render_compiled(compiled, arguments, _fill, is_resource), "prompt", item.name, item.version,
                      item.label)

    def argument_specs(self, viewer: Viewer, name: str) -> tuple[Mapping[str, Any], ...]:
        """The served version's argument specs (types, bounds): what an input-required form asks for."""
        item = self.prompt(viewer, name)
        return tuple(_compiled(item).arguments)

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
            return Served({"contents": [_resource_content(item)]}, "resource", uri, item.version,
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
            body = _body(template)
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
        if self.partial:  # its rows were read without suggestions (items.listing_text)
            raise RuntimeError("a part of the catalog answers no completion: ask the whole catalog")
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
