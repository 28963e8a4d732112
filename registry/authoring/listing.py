"""The small per-version summary serving lists and completion: a version's `listing` column.

Written once when a version is published (and backfilled by a migration), it holds what
`prompts/list`, `resources/list`, `resources/templates/list` and `completion/complete` need,
so building a label's catalog reads a few hundred bytes per entry and never the message
bodies, resource text or template bodies (those are loaded on demand, registry/serving/catalog.py).
Which snapshot keys an item carries is the snapshot schema's `listed` (registry/authoring/schema.py).

    prompt:   {"item": {name, title, description, arguments: [{name, title, description, required}]},
               "suggestions": {argument: [value, ...]}, "tags": [...], "resource_arguments": [name, ...]}
    resource: {"item": {uri, name, title, description, mimeType, size, annotations},
               "content": {uri, mimeType, sha256, size, encoding}}
    template: {"item": {uriTemplate, name, title, description, mimeType, annotations},
               "suggestions": {variable: [value, ...]}}
    snippet:  {"item": {name, description}, "tags": [...]} (never listed to clients)

Every kind's listing also carries `includes` (the snippets its texts reference, 'name' or
'name@3') when there are any: the catalog resolves them per label (registry/serving/items.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registry.authoring.schema import SCHEMAS, schema_of
from registry.authoring.snapshots import resource_content
from registry.formats import argtypes

LISTING_VERSION = 1
# Snapshot keys whose change changes a list item (announced as list_changed): what the item shows
# (the snapshot schema's `listed`), the arguments it lists, and the tags that decide who sees it.
LIST_FIELDS = tuple(dict.fromkeys([*(key for schema in SCHEMAS.values() for key in schema.listed),
                                   "arguments", "tags"]))


def list_changed(kind: str, before: Mapping[str, Any] | None, after: Mapping[str, Any] | None) -> bool:
    """Whether serving `after` instead of `before` (snapshots; None: not served) changes what a list
    shows: always for prompts (their list items carry their arguments' words), else by LIST_FIELDS."""
    if kind == "prompt" or before is None or after is None:
        return True
    return any(before.get(f) != after.get(f) for f in LIST_FIELDS)


def _pick(snapshot: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The `keys` (the schema's `listed`) that the snapshot has, mappings copied."""
    return {k: dict(v) if isinstance(v, dict) else v for k in keys
            if (v := snapshot.get(k)) not in ("", None, {}, [])}


def _tags(snapshot: Mapping[str, Any]) -> list[str]:
    return sorted(snapshot.get("tags") or ())


def prompt_listing(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """Arguments are listed with their constraint in words ("one of: formal, warm"), so clients
    that only show text still help users; completion offers what the argument's type allows."""
    schema = schema_of("prompt")
    listed = tuple(k for k in schema.table("arguments").listed if k != "required")  # type: ignore[union-attr]
    arguments = snapshot.get("arguments", [])
    item = _pick(snapshot, schema.listed)
    item["arguments"] = [
        _pick(a | {"description": argtypes.listed_description(a)}, listed) | {"required": bool(a.get("required"))}
        for a in arguments
    ]
    suggestions = {a["name"]: list(argument_pool(a)) for a in arguments}
    resource_arguments = [a["name"] for a in arguments if argtypes.type_of(a) == argtypes.RESOURCE]
    return {"v": LISTING_VERSION, "item": item, "suggestions": suggestions, "tags": _tags(snapshot),
            "resource_arguments": resource_arguments}


def argument_pool(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Completion values an argument's type allows: its choices, true/false, else its suggestions."""
    kind = argtypes.type_of(spec)
    if kind == argtypes.ENUM:
        choices = list(spec.get("choices") or ())
        suggested = [s for s in spec.get("suggestions", ()) if s in choices]
        return tuple(dict.fromkeys(suggested + choices))  # editors' suggestions first
    if kind == argtypes.BOOLEAN:
        return ("true", "false")
    return tuple(spec.get("suggestions", ()))


def resource_listing(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    item = _pick(snapshot, schema_of("resource").listed)
    ref = resource_content(snapshot)
    ref.pop("text", None)
    ref.pop("blob", None)
    return {"v": LISTING_VERSION, "item": item, "content": ref, "tags": _tags(snapshot)}


def template_listing(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    item = _pick(snapshot, schema_of("template").listed)
    suggestions = {v["name"]: list(v.get("suggestions", ())) for v in snapshot.get("variables", [])}
    return {"v": LISTING_VERSION, "item": item, "suggestions": suggestions, "tags": _tags(snapshot)}


def snippet_listing(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    item = _pick(snapshot, schema_of("snippet").listed)
    return {"v": LISTING_VERSION, "item": item, "tags": _tags(snapshot)}


_BY_KIND = {"prompt": prompt_listing, "resource": resource_listing, "template": template_listing,
            "snippet": snippet_listing}


def listing_of(kind: str, snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The listing column of a version of `kind` ("prompt", "resource", "template", "snippet")."""
    listing = _BY_KIND[kind](snapshot)
    if snapshot.get("includes"):
        listing["includes"] = list(snapshot["includes"])
    return listing
