"""Working copy -> frozen snapshot, the snapshot's content hash, and field-level diffs.

A snapshot is the MCP-shaped content of one version (placeholders still unrendered), so the
read side serves it without touching the working-copy tables. Its `tags` (sorted, left out when
there are none) decide which scoped clients see the version, so a tag change is a content change:
it is reviewed, published, diffed and audited like any other, and a draft's tags serve nothing.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from typing import Any

from registry.models import Prompt, Resource, ResourceTemplate, VersionedEntry


def _b64(data: bytes | memoryview | None) -> str:
    return base64.b64encode(bytes(data or b"")).decode("ascii")


def _annotations(entry: Any) -> dict[str, Any]:
    annotations: dict[str, Any] = {}
    if entry.audience:
        annotations["audience"] = entry.audience.split(",")
    if entry.priority is not None:
        annotations["priority"] = entry.priority
    return annotations


def _tag_list(entry: VersionedEntry) -> list[str]:
    return sorted(entry.tag_set)


def _omit_empty(d: dict[str, Any], *keys: str) -> dict[str, Any]:
    for key in keys:
        if d.get(key) in ("", None, {}, []):
            d.pop(key, None)
    return d


def resource_content(resource_snapshot: dict[str, Any]) -> dict[str, Any]:
    """The `resources/read` contents item of a resource snapshot."""
    item: dict[str, Any] = {"uri": resource_snapshot["uri"]}
    if resource_snapshot.get("mimeType"):
        item["mimeType"] = resource_snapshot["mimeType"]
    if "blob" in resource_snapshot:
        item["blob"] = resource_snapshot["blob"]
    else:
        item["text"] = resource_snapshot.get("text", "")
    return item


def _message_block(message: Any) -> dict[str, Any]:
    kind = message.kind
    if kind == "text":
        return {"type": "text", "text": message.text}
    if kind in ("image", "audio"):
        return {"type": kind, "data": _b64(message.data), "mimeType": message.mime_type}
    linked = message.resource
    if kind == "resource":
        if linked is not None:
            published = linked.versions.order_by("-number").first()
            source = published.snapshot if published else snapshot_resource(linked)
            return {"type": "resource", "resource": resource_content(source)}
        resource: dict[str, Any] = {"uri": message.uri}
        if message.mime_type:
            resource["mimeType"] = message.mime_type
        if message.data:
            resource["blob"] = _b64(message.data)
        else:
            resource["text"] = message.text
        return {"type": "resource", "resource": resource}
    # resource_link
    block: dict[str, Any] = {"type": "resource_link", "uri": message.uri, "name": message.link_name}
    if linked is not None:
        block.update(uri=linked.uri, name=message.link_name or linked.name, title=linked.title,
                     description=linked.description, mimeType=linked.mime_type)
    elif message.mime_type:
        block["mimeType"] = message.mime_type
    if not block["name"]:
        block["name"] = block["uri"]
    return _omit_empty(block, "title", "description", "mimeType")


def _messages(prompt: Prompt) -> Any:
    """The prompt's messages with their linked resources: prefetched ones as they are, else one query."""
    if "messages" in getattr(prompt, "_prefetched_objects_cache", {}):
        return prompt.messages.all()
    return prompt.messages.select_related("resource").all()


def snapshot_prompt(prompt: Prompt) -> dict[str, Any]:
    arguments = []
    for arg in prompt.arguments.all():
        item = {"name": arg.name, "title": arg.title, "description": arg.description, "required": arg.required}
        _omit_empty(item, "title", "description")
        if not arg.required and arg.default:
            item["default"] = arg.default
        if arg.suggestion_list:
            item["suggestions"] = arg.suggestion_list
        arguments.append(item)
    messages = [{"role": m.role, "content": _message_block(m)} for m in _messages(prompt)]
    return _omit_empty(
        {"name": prompt.name, "title": prompt.title, "description": prompt.description,
         "arguments": arguments, "messages": messages, "tags": _tag_list(prompt)},
        "title", "tags",
    )


def snapshot_resource(resource: Resource) -> dict[str, Any]:
    snap: dict[str, Any] = {
        "uri": resource.uri, "name": resource.name, "title": resource.title,
        "description": resource.description, "mimeType": resource.mime_type,
        "annotations": _annotations(resource), "size": resource.size, "tags": _tag_list(resource),
    }
    if resource.data:
        snap["blob"] = _b64(resource.data)
    else:
        snap["text"] = resource.text
    return _omit_empty(snap, "title", "description", "mimeType", "annotations", "tags")


def snapshot_template(template: ResourceTemplate) -> dict[str, Any]:
    variables = []
    for variable in template.variables.all():
        item = {"name": variable.name, "description": variable.description,
                "suggestions": variable.suggestion_list}
        variables.append(_omit_empty(item, "description", "suggestions"))
    snap = {
        "uriTemplate": template.uri_template, "name": template.name, "title": template.title,
        "description": template.description, "mimeType": template.mime_type,
        "annotations": _annotations(template), "body": template.body, "variables": variables,
        "tags": _tag_list(template),
    }
    return _omit_empty(snap, "title", "description", "mimeType", "annotations", "variables", "tags")


def snapshot_of(entry: VersionedEntry) -> dict[str, Any]:
    if isinstance(entry, Prompt):
        return snapshot_prompt(entry)
    if isinstance(entry, Resource):
        return snapshot_resource(entry)
    if isinstance(entry, ResourceTemplate):
        return snapshot_template(entry)
    raise TypeError(f"not a registry entry: {entry!r}")


def canonical_json(snapshot: dict[str, Any]) -> str:
    return json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def content_hash(snapshot: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json(snapshot).encode("utf-8")).hexdigest()


def _flatten(value: Any, path: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            _flatten(item, f"{path}.{key}" if path else key, out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for index, item in enumerate(value):
            _flatten(item, f"{path}[{index + 1}]", out)
    else:
        out[path] = value


def diff_snapshots(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Field-level changes between two snapshots, e.g. {'field': 'messages[2].content.text', ...}.

    Base64 payloads are summarised by size and hash so the audit log stays readable.
    """
    flat_before: dict[str, Any] = {}
    flat_after: dict[str, Any] = {}
    _flatten(before or {}, "", flat_before)
    _flatten(after or {}, "", flat_after)
    changes = []
    for field in sorted(set(flat_before) | set(flat_after), key=_field_order):
        old, new = flat_before.get(field), flat_after.get(field)
        if old != new:
            changes.append({"field": field, "before": _summarise(field, old), "after": _summarise(field, new)})
    return changes


def _field_order(field: str) -> str:
    return re.sub(r"\[(\d+)\]", lambda m: f"[{int(m.group(1)):06d}]", field)


def _summarise(field: str, value: Any) -> Any:
    if isinstance(value, str) and (field.endswith(".data") or field.endswith("blob")) and len(value) > 64:
        raw = base64.b64decode(value)
        return f"<{len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:12]}>"
    return value
