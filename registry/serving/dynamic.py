"""Built-in dynamic resources: content computed on read from the registry itself.

A provider is one registered render function plus what clients need to list, cache and
subscribe to it: a URI (or an RFC 6570 URI template), a title, a MIME type, the entry kinds
whose changes alter what it returns (`depends_on`), and the 2026-07-28 caching hints it asks
for (`ttl_ms`, `cache_scope`). The catalog (registry/serving/catalog.py) lists and reads providers
generically and the notification hub announces them from `depends_on` and `affected`, so a
new dynamic resource is one small `@provider` function here and nothing elsewhere.

Scope is the render function's duty: it gets the viewer and the viewer's catalog and must
mention only entries the viewer may see (`visible`); an entry the viewer may not see is
"not found" (UnknownResource), never an empty answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from registry.audit import without_names
from registry.conf import registry_settings
from registry.errors import UnknownPrompt, UnknownResource
from registry.formats.uris import UriTemplateMatcher
from registry.serving.items import last_modified
from registry.serving.viewer import served_item

# render(catalog, viewer, params, uri) -> the resource's contents items (each with uri and mimeType)
Render = Callable[[Any, Any, Mapping[str, str], str], list[dict[str, Any]]]
# affected(params, kind, key) -> whether a change of (kind, key) alters what `params` return
Affected = Callable[[Mapping[str, str], str, str], bool]
# exists(catalog, viewer, params) -> whether a read would find something (judged without a query)
Exists = Callable[[Any, Any, Mapping[str, str]], bool]
# suggest(catalog, viewer, variable) -> values completion/complete offers for a template variable
Suggest = Callable[[Any, Any, str], Iterable[str]]


def _always(_params: Mapping[str, str], _kind: str, _key: str) -> bool:
    return True


def _exists(_catalog: Any, _viewer: Any, _params: Mapping[str, str]) -> bool:
    return True


@dataclass(frozen=True)
class Provider:
    """One dynamic resource (fixed `uri`) or resource template (`uri_template`)."""

    uri: str
    title: str
    mime_type: str
    render: Render
    description: str = ""
    depends_on: frozenset[str] = frozenset({"prompt", "resource", "template"})
    ttl_ms: int | None = None  # None: the endpoint's default
    cache_scope: str | None = None  # "private" forces private; None/"public": the viewer decides
    templated: bool = False
    affected: Affected = _always
    suggest: Suggest | None = None
    exists: Exists = _exists
    matcher: UriTemplateMatcher | None = field(default=None, compare=False)

    @property
    def listing(self) -> dict[str, Any]:
        """What resources/list (or resources/templates/list) shows of it."""
        item: dict[str, Any] = {"uriTemplate" if self.templated else "uri": self.uri,
                                "name": self.uri.rsplit("://", 1)[-1], "title": self.title, "mimeType": self.mime_type}
        if self.description:
            item["description"] = self.description
        return item

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables of `uri`, or None (a fixed provider matches its own URI only)."""
        if not self.templated:
            return {} if uri == self.uri else None
        assert self.matcher is not None
        try:
            return self.matcher.match(uri)
        except Exception:  # an unsafe URI never matches
            return None


PROVIDERS: list[Provider] = []


def provider(*, uri: str, title: str, mime_type: str, description: str = "",
             depends_on: Iterable[str] = ("prompt", "resource", "template"), ttl_ms: int | None = None,
             cache_scope: str | None = None, affected: Affected | None = None,
             suggest: Suggest | None = None, exists: Exists | None = None) -> Callable[[Render], Render]:
    """Register `render` as the dynamic resource `uri` (a URI template when it contains "{")."""
    if cache_scope not in (None, "public", "private"):
        raise ValueError(f"cache_scope must be 'public' or 'private', not {cache_scope!r}")
    templated = "{" in uri

    def register(render: Render) -> Render:
        PROVIDERS.append(Provider(
            uri=uri, title=title, mime_type=mime_type, render=render, description=description,
            depends_on=frozenset(depends_on), ttl_ms=ttl_ms, cache_scope=cache_scope, templated=templated,
            affected=affected or _always, suggest=suggest, exists=exists or _exists,
            matcher=UriTemplateMatcher.build(uri) if templated else None,
        ))
        return render

    return register


def fixed() -> list[Provider]:
    return [p for p in PROVIDERS if not p.templated]


def templates() -> list[Provider]:
    return [p for p in PROVIDERS if p.templated]


def template(uri_template: str) -> Provider | None:
    return next((p for p in templates() if p.uri == uri_template), None)


def find(uri: str) -> tuple[Provider, dict[str, str]] | None:
    """The provider serving `uri` and its variables; fixed URIs before templates."""
    for candidate in fixed() + templates():
        variables = candidate.match(uri)
        if variables is not None:
            return candidate, variables
    return None


def affected_uris(uris: Iterable[str], kind: str, key: str) -> list[str]:
    """Those of `uris` served by a provider whose content a change of (kind, key) may alter.

    Who may see the change is the caller's judgement (the hub and the stream replay differ)."""
    out = []
    for uri in sorted(uris):
        found = find(uri)
        if found is not None and kind in found[0].depends_on and found[0].affected(found[1], kind, key):
            out.append(uri)
    return out


# ------------------------------------------------------------------------------ helpers
def visible(catalog: Any, viewer: Any, kind: str, key: str) -> bool:
    """Whether `viewer` is served entry (kind, key) by `catalog` (scope by the served version's tags,
    a rollout's candidate included: registry.serving.viewer.served_item)."""
    if kind == "prompt":
        item = catalog.prompt_items.get(key)
    elif kind == "resource":
        item = catalog.resource_items.get(key)
    else:
        item = next((t for t in catalog.template_items if t.uri_template == key), None)
    return served_item(item, viewer) is not None


def _when(value: Any) -> str:
    return last_modified(value) if value is not None else ""


def _cell(value: Any) -> str:
    """A Markdown table cell: one line, pipes escaped."""
    return " ".join(str(value if value is not None else "").split()).replace("|", "\\|")


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(_cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def _both(uri: str, markdown: str, data: Any) -> list[dict[str, Any]]:
    """Markdown first, then the same facts as JSON (a second contents item)."""
    return [{"uri": uri, "mimeType": "text/markdown", "text": markdown},
            {"uri": uri, "mimeType": "application/json", "text": json.dumps(data, ensure_ascii=False)}]


# ------------------------------------------------------------------------------ history
# A client reads the history of what it is served, no more: the versions the label it is served
# from moved to, plus the one it is served now (a rollout's candidate, when it gets it), each only
# if that version's tags admit it, with the versions' own change notes. Label-move notes (an
# incident's reason), staging-only versions and rollouts it is not in stay out, and so do
# people's names unless REGISTRY["SHOW_NAMES_TO_CLIENTS"] is on. Which version it is served, and
# from which label, is the catalog's answer (Catalog.served_to); what a label served before is
# registry/serving/label_history.py's.


def names_shown() -> bool:
    """Whether MCP clients see who published and approved (REGISTRY["SHOW_NAMES_TO_CLIENTS"], default off)."""
    return bool(registry_settings.SHOW_NAMES_TO_CLIENTS)


def _served(catalog: Any, viewer: Any) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(kind, key) -> what the viewer is served of each entry it sees: version, label, in_rollout."""
    return {(row["kind"], row["key"]): row for row in catalog.served_to(viewer)}


def _versions(kind: str, wanted: Iterable[tuple[int, int]]) -> dict[tuple[int, int], tuple[Any, ...]]:
    """(entry id, number) -> (created_at, author_name, change_note, tags) of those versions of `kind`."""
    from django.db.models import Q

    from registry.kinds import KINDS

    wanted = list(dict.fromkeys(wanted))
    found: dict[tuple[int, int], tuple[Any, ...]] = {}
    for start in range(0, len(wanted), 200):
        chunk = Q()
        for entry_id, number in wanted[start:start + 200]:
            chunk |= Q(entry_id=entry_id, number=number)
        rows = KINDS[kind].version_model.objects.filter(chunk).values_list(
            "entry_id", "number", "created_at", "author_name", "change_note", "listing")
        for entry_id, number, created_at, author, note, listing in rows:
            found[(entry_id, number)] = (created_at, author, note, frozenset((listing or {}).get("tags") or ()))
    return found


def _note(note: str) -> str:

    return note if names_shown() else without_names(note)


# ------------------------------------------------------------------------------ providers
RECENT_CHANGES = 50
_SCAN_LIMIT = 5000  # audit rows looked at per read, so a scoped viewer's read stays bounded
_CHUNK = 500


@provider(uri="registry://changes/recent", title="Recent published changes", mime_type="text/markdown",
          description=f"The last {RECENT_CHANGES} changes of what you are served: Markdown, then JSON.",
          ttl_ms=10_000)
def recent_changes(catalog: Any, viewer: Any, params: Mapping[str, str], uri: str) -> list[dict[str, Any]]:
    from registry.models import AuditAction, AuditEntry
    from registry.serving.label_history import MOVES

    served = _served(catalog, viewer)
    rows = (AuditEntry.objects.filter(action__in=[*MOVES, AuditAction.ROLLOUT_CHANGED]).order_by("-id")
            .values_list("entry_kind", "entry_id", "entry_key", "action", "label", "to_version", "actor_name",
                         "created_at")[:_SCAN_LIMIT])
    changes: list[dict[str, Any]] = []
    chunk: list[tuple[Any, ...]] = []

    def take(batch: list[tuple[Any, ...]]) -> None:
        wanted: dict[str, list[tuple[int, int]]] = {}
        for kind, entry_id, _key, _action, _label, number, _actor, _when_at in batch:
            wanted.setdefault(kind, []).append((entry_id, number))
        versions = {(kind, *k): v for kind, pairs in wanted.items() for k, v in _versions(kind, pairs).items()}
        for kind, entry_id, key, action, label, number, actor, created_at in batch:
            version = versions.get((kind, entry_id, number))
            if version is None or not viewer.sees(version[3]) or len(changes) >= RECENT_CHANGES:
                continue
            change = {"kind": kind, "entry": key, "action": action, "version": number, "label": label,
                      "note": _note(version[2]), "time": _when(created_at)}
            if names_shown():
                change["author"] = actor
            changes.append(change)

    composed: dict[str, list[tuple[str, Any]]] | None = None
    for row in rows.iterator(chunk_size=_CHUNK):
        kind, _entry_id, key, action, label, number, _actor, _created = row
        if kind == "snippet":  # served to no one itself: what it changed is the entries following it
            if composed is None:
                composed = _following(catalog, viewer)
            take(chunk)
            chunk = []
            changes.extend(_dependent_changes(composed, row)[:RECENT_CHANGES - len(changes)])
            if len(changes) >= RECENT_CHANGES:
                break
            continue
        now = served.get((kind, key))
        if now is None or label != now["label"] or number is None:
            continue
        if action == AuditAction.ROLLOUT_CHANGED and not (now["in_rollout"] and number == now["version"]):
            continue  # a rollout the viewer is not in (or no longer in) served it nothing
        chunk.append(row)
        if len(chunk) >= RECENT_CHANGES:
            take(chunk)
            chunk = []
            if len(changes) >= RECENT_CHANGES:
                break
    if chunk and len(changes) < RECENT_CHANGES:
        take(chunk)
    headers = ["Time", "Kind", "Entry", "Version", "Label", "Change", *(["Author"] if names_shown() else []), "Note"]
    table = _table(headers, [[c["time"], c["kind"], c["entry"], c["version"], c["label"], c["action"]]
                             + ([c["author"]] if names_shown() else []) + [c["note"]] for c in changes])
    markdown = "# Recent published changes\n\n" + (table if changes else "No published changes yet.") + "\n"
    return _both(uri, markdown, {"changes": changes})


def _following(catalog: Any, viewer: Any) -> dict[str, list[tuple[str, Any]]]:
    """Snippet name -> (kind, served item) of the composed entries the viewer is served that follow it."""
    out: dict[str, list[tuple[str, Any]]] = {}
    for kind, items in (("prompt", catalog.prompt_items.values()), ("resource", catalog.resource_items.values()),
                        ("template", catalog.template_items)):
        for item in items:
            served = served_item(item, viewer)
            for name, _number in getattr(served, "parts", ()):
                out.setdefault(name, []).append((kind, served))
    return out


def _dependent_changes(following: Mapping[str, list[tuple[str, Any]]], row: tuple[Any, ...]) -> list[dict[str, Any]]:
    """The changes a snippet's label move made to what the viewer is served: one per entry that
    follows the snippet and is served now with the version the move put on that label (from that
    label row, or from any row when production moved: entries served from another label fall back
    to production's snippet where it has none there)."""
    _kind, _entry_id, name, action, label, number, actor, created_at = row
    out = []
    for kind, item in following.get(name, ()):
        if (name, number) not in item.parts or (label != "production" and item.label != label):
            continue
        change = {"kind": kind, "entry": item.key, "action": action, "version": item.version, "label": item.label,
                  "note": f"Uses snippet {name} v{number}.", "time": _when(created_at), "snippet": name}
        if names_shown():
            change["author"] = actor
        out.append(change)
    return sorted(out, key=lambda c: (c["kind"], c["entry"]))


def _changelog_affected(params: Mapping[str, str], kind: str, key: str) -> bool:
    return kind == "prompt" and (key == "*" or params.get("name") == key)


def _visible_prompt_names(catalog: Any, viewer: Any, variable: str) -> list[str]:
    return [p["name"] for p in catalog.prompts(viewer)] if variable == "name" else []


def _prompt_visible(catalog: Any, viewer: Any, params: Mapping[str, str]) -> bool:
    return visible(catalog, viewer, "prompt", params.get("name", ""))


@provider(uri="registry://prompts/{name}/changelog", title="Prompt changelog", mime_type="text/markdown",
          description="The versions of one prompt you have been served, newest first: Markdown, then JSON.",
          depends_on={"prompt"}, ttl_ms=10_000, affected=_changelog_affected, suggest=_visible_prompt_names,
          exists=_prompt_visible)
def prompt_changelog(catalog: Any, viewer: Any, params: Mapping[str, str], uri: str) -> list[dict[str, Any]]:
    from registry.models import Prompt
    from registry.serving.label_history import versions_served

    name = params.get("name", "")
    try:
        item = catalog.prompt(viewer, name)
    except UnknownPrompt:
        raise UnknownResource(uri) from None
    now = _served(catalog, viewer)[("prompt", item.name)]
    entry_id = Prompt.objects.filter(name=item.name).values_list("pk", flat=True).first()
    numbers = versions_served("prompt", entry_id, now["label"]) | {now["version"]} if entry_id else set()
    found = _versions("prompt", [(entry_id, n) for n in numbers if entry_id])  # no numbers without an entry
    versions = []
    for (_entry, number), (created_at, author, note, tags) in sorted(found.items(), key=lambda kv: -kv[0][1]):
        if not viewer.sees(tags):
            continue
        version: dict[str, Any] = {"version": number, "date": _when(created_at), "note": _note(note),
                   "labels": [now["label"]] if number == now["version"] else []}
        if names_shown():
            version["author"] = author
        versions.append(version)
    headers = ["Version", "Date"] + (["Author"] if names_shown() else []) + ["Labels", "Note"]
    table = _table(headers, [[v["version"], v["date"]] + ([v["author"]] if names_shown() else [])
                             + [", ".join(v["labels"]), v["note"]] for v in versions])
    markdown = f"# Changelog of prompt {item.name}\n\n{table}\n"
    return _both(uri, markdown, {"prompt": item.name, "versions": versions})
