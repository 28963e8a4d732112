"""Working copy -> frozen snapshot, the snapshot's content hash, and field-level diffs.

A snapshot is the MCP-shaped content of one version (placeholders still unrendered), so the
read side serves it without touching the working-copy tables. Its `tags` (sorted, left out when
there are none) decide which scoped clients see the version, so a tag change is a content change:
it is reviewed, published, diffed and audited like any other, and a draft's tags serve nothing.

Documents are not inside it: a resource, an embedded resource or an image/audio block carries
a reference to the content store instead, `{"sha256", "size", "encoding": "text"|"base64"}`
(registry/storage/blobs.py), so a version row stays small while its content hash still changes
whenever the bytes do. `materialise` turns a reference back into the MCP `text`/`blob` item.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from django.db.models import Prefetch, QuerySet

from registry.errors import ContentMissing, TemplateSyntaxError
from registry.formats import argtypes
from registry.formats.references import spelled_references
from registry.models import (
    Prompt,
    PromptMessage,
    Resource,
    ResourceTemplate,
    ResourceVersion,
    Snippet,
    VersionedEntry,
)
from registry.storage import blobs as content
from registry.storage.cache import ContentCache

# sha256 -> bytes a publish must store first, or None for bytes that must already be stored.
Payloads = dict[str, bytes | None]
# (sha256, encoding) -> the served string: the text itself, or the bytes as base64.
Loader = Callable[[str, str], str]


# Texts of drafts hashed lately, so a diff can show them before they are stored (bounded).
_recent_texts = ContentCache(lambda: 4 * 1024 * 1024)
DIFF_TEXT_LIMIT = 64 * 1024  # longer texts are recorded in the audit log by size and hash
# The pages that show a diff load document texts up to this size per side from the content store
# and diff them line by line, then word by word. The line diff grows faster than linearly with
# the text when changes are spread through it (one changed line in fifty: 64 KiB 54 ms, 256 KiB
# 0.43 s, 1 MiB 9.8 s on the development machine) and a page holds both sides, so larger
# documents are shown by size, type and hash: a page stays well under a second and reads at most
# 2 x 256 KiB, however large the documents are (uploads go up to REGISTRY["MAX_UPLOAD_BYTES"]).
DIFF_DOCUMENT_LIMIT = 256 * 1024


def _text_ref(text: str, payloads: Payloads | None) -> dict[str, Any]:
    raw = text.encode("utf-8")
    sha = content.sha256_of(raw)
    if payloads is not None:
        payloads[sha] = raw
    if len(raw) <= DIFF_TEXT_LIMIT:
        _recent_texts.put(sha, text, len(raw))
    return {"sha256": sha, "size": len(raw), "encoding": "text"}


def _bytes_ref(row: Any, payloads: Payloads | None) -> dict[str, Any]:
    if payloads is not None:
        # Bytes assigned and not stored yet (an upload in a form being previewed) are the draft's
        # own payload, like its new text; anything else is read from the content store.
        pending = row.__dict__.get("_stored_bytes")
        if pending is not None and pending[2] and pending[0] == row.data_sha256:
            payloads[row.data_sha256] = pending[1]
        else:
            payloads.setdefault(row.data_sha256, None)
    return {"sha256": row.data_sha256, "size": row.data_size, "encoding": "base64"}


def store_payloads(payloads: Payloads) -> None:
    """Put a snapshot's new text into the content store and check its stored bytes are there.

    Called by publish before the version row is written: a storage failure raises and rolls
    the publish back, and at worst leaves an unreferenced object behind.
    """
    for raw in payloads.values():
        if raw is not None:
            content.put(raw)
    content.check_stored(sha for sha, raw in payloads.items() if raw is None)  # never publish over a damaged object


def read_content(sha256: str, encoding: str) -> str:
    """The default Loader: straight from the content store (the catalog uses its bounded cache)."""
    raw = content.read(sha256)
    return raw.decode("utf-8") if encoding == "text" else base64.b64encode(raw).decode("ascii")


def draft_loader(payloads: Payloads) -> Loader:
    """A Loader for previews of a draft: its own unpublished text first, the content store after."""

    def load(sha256: str, encoding: str) -> str:
        raw = payloads.get(sha256)
        if raw is None:
            return read_content(sha256, encoding)
        return raw.decode("utf-8") if encoding == "text" else base64.b64encode(raw).decode("ascii")

    return load


def materialise(ref: Mapping[str, Any], load: Loader = read_content) -> dict[str, Any]:
    """A resource content reference -> the MCP contents item (`text` or base64 `blob`)."""
    item: dict[str, Any] = {"uri": ref["uri"]}
    if ref.get("mimeType"):
        item["mimeType"] = ref["mimeType"]
    if "sha256" not in ref:  # inline content
        if "blob" in ref:
            item["blob"] = ref["blob"]
        else:
            item["text"] = ref.get("text", "")
        return item
    encoding = ref.get("encoding", "text")
    item["blob" if encoding == "base64" else "text"] = load(ref["sha256"], encoding)
    return item


def materialise_block(block: Mapping[str, Any], load: Loader = read_content) -> dict[str, Any]:
    """A prompt message's content block with its stored bytes filled in, as clients receive it."""
    kind = block.get("type")
    if kind in ("image", "audio") and "sha256" in block:
        return {"type": kind, "data": load(block["sha256"], "base64"), "mimeType": block.get("mimeType", "")}
    if kind == "resource":
        return {"type": "resource", "resource": materialise(block["resource"], load)}
    return dict(block)


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


def resource_content(resource_snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """The content reference of a resource snapshot: its URI, MIME type and stored bytes (not the bytes)."""
    item: dict[str, Any] = {"uri": resource_snapshot["uri"]}
    if resource_snapshot.get("mimeType"):
        item["mimeType"] = resource_snapshot["mimeType"]
    for key in ("sha256", "size", "encoding", "text", "blob"):
        if key in resource_snapshot:
            item[key] = resource_snapshot[key]
    return item


def with_content(snapshot: Mapping[str, Any], load: Loader = read_content) -> dict[str, Any]:
    """A snapshot with its stored documents inlined (`text`, or base64 `blob`/`data`) as clients receive them."""
    out = dict(snapshot)
    if "sha256" in out and "uri" in out:
        item = materialise(out, load)
        for key in ("sha256", "encoding"):
            out.pop(key, None)
        out.update({k: v for k, v in item.items() if k in ("text", "blob")})
    if "messages" in out:
        out["messages"] = [{**m, "content": materialise_block(m["content"], load)} for m in out["messages"]]
    return out


def _message_block(message: Any, payloads: Payloads | None = None) -> dict[str, Any]:
    kind = message.kind
    if kind == "text":
        return {"type": "text", "text": message.text}
    if kind in ("image", "audio"):
        ref = _bytes_ref(message, payloads)
        return {"type": kind, "mimeType": message.mime_type, "sha256": ref["sha256"], "size": ref["size"]}
    linked = message.resource
    if kind == "resource":
        if linked is not None:
            if hasattr(linked, "_newest_versions"):  # read for a whole page by for_snapshots
                published = linked._newest_versions[0] if linked._newest_versions else None
            else:
                published = linked.versions.order_by("-number").first()
            source = published.snapshot if published else snapshot_resource(linked, payloads)
            block: dict[str, Any] = {"type": "resource", "resource": resource_content(source)}
            if source.get("includes"):  # expanded where it is served: what that needs, frozen with the prompt
                block["includes"] = list(source["includes"])
            return block
        resource: dict[str, Any] = {"uri": message.uri}
        if message.mime_type:
            resource["mimeType"] = message.mime_type
        resource.update(_bytes_ref(message, payloads) if message.data_sha256 else _text_ref(message.text, payloads))
        return {"type": "resource", "resource": resource}
    # resource_link
    block = {"type": "resource_link", "uri": message.uri, "name": message.link_name}
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


def snapshot_argument(arg: Any) -> dict[str, Any]:
    """One argument (a saved or unsaved PromptArgument row) as its snapshot spec.

    The type and its bounds are written only for typed arguments, so an untyped argument's
    snapshot (and so its version's content hash) is the same as before types existed.
    """
    item: dict[str, Any] = {"name": arg.name, "title": arg.title, "description": arg.description,
                            "required": arg.required}
    _omit_empty(item, "title", "description")
    if not arg.required and arg.default:
        item["default"] = arg.default
    if arg.suggestion_list:
        item["suggestions"] = arg.suggestion_list
    kind = arg.type or argtypes.TEXT
    if kind != argtypes.TEXT:
        item["type"] = kind
    bounds = {"choices": arg.choice_list, "minLength": arg.min_length, "maxLength": arg.max_length,
              "pattern": arg.pattern, "minimum": argtypes.plain_number(arg.minimum),
              "maximum": argtypes.plain_number(arg.maximum)}
    for key in argtypes.ALL_BOUNDS:
        if bounds[key] not in (None, "", []):
            item[key] = bounds[key]
    return item


def _includes(texts: Any) -> list[str]:
    """The snippets `texts` reference (registry/formats/references.py), as a snapshot's `includes`:
    derived from the texts, so it changes only when they do, and left out when there are none (a
    snapshot without references, and so its content hash, is what it was before snippets). A draft
    with a malformed reference lists the well-formed ones; validation refuses to publish it."""
    spelled: set[str] = set()
    for text in texts:
        try:
            spelled.update(spelled_references([text]))
        except TemplateSyntaxError:
            continue
    return sorted(spelled)


def snapshot_prompt(prompt: Prompt, payloads: Payloads | None = None, *, arguments: Any = None,
                    messages: Any = None) -> dict[str, Any]:
    """The prompt's snapshot; `arguments` / `messages` (ordered rows) stand in for the saved ones.

    The admin's unsaved-edit preview passes the rows of the submitted form, which are never saved.
    """
    items = [snapshot_argument(arg) for arg in (prompt.arguments.all() if arguments is None else arguments)]
    rows = _messages(prompt) if messages is None else messages
    blocks = [{"role": m.role, "content": _message_block(m, payloads)} for m in rows]
    # The prompt's own texts' references and those of the registry resources it embeds (each block
    # carries its resource version's): the uses index, the dependents and the catalog's parts read them.
    includes = sorted({*_includes(m.text for m in rows if m.kind == "text"),
                       *(spelled for b in blocks for spelled in b["content"].get("includes") or ())})
    return _omit_empty(
        {"name": prompt.name, "title": prompt.title, "description": prompt.description,
         "arguments": items, "messages": blocks, "tags": _tag_list(prompt), "includes": includes},
        "title", "tags", "includes",
    )


def snapshot_resource(resource: Resource, payloads: Payloads | None = None) -> dict[str, Any]:
    snap: dict[str, Any] = {
        "uri": resource.uri, "name": resource.name, "title": resource.title,
        "description": resource.description, "mimeType": resource.mime_type,
        "annotations": _annotations(resource), "size": resource.size, "tags": _tag_list(resource),
        "includes": [] if resource.data_sha256 else _includes([resource.text]),
    }
    snap.update(_bytes_ref(resource, payloads) if resource.data_sha256 else _text_ref(resource.text, payloads))
    return _omit_empty(snap, "title", "description", "mimeType", "annotations", "tags", "includes")


def snapshot_template(template: ResourceTemplate, *, variables: Any = None) -> dict[str, Any]:
    """A template's snapshot; `variables` (ordered rows) stand in for the saved ones (the admin's
    preview of unsaved edits passes the rows of the submitted form)."""
    rows = template.variables.all() if variables is None else variables
    declared = []
    for variable in rows:
        item = {"name": variable.name, "description": variable.description,
                "suggestions": variable.suggestion_list}
        declared.append(_omit_empty(item, "description", "suggestions"))
    snap = {
        "uriTemplate": template.uri_template, "name": template.name, "title": template.title,
        "description": template.description, "mimeType": template.mime_type,
        "annotations": _annotations(template), "body": template.body, "variables": declared,
        "tags": _tag_list(template), "includes": _includes([template.body]),
    }
    return _omit_empty(snap, "title", "description", "mimeType", "annotations", "variables", "tags", "includes")


def snapshot_snippet(snippet: Snippet, *, arguments: Any = None) -> dict[str, Any]:
    """A snippet's snapshot: its text (inline: snippets are short and read with the including
    entry's version), the arguments it uses, and the snippets it includes in turn."""
    rows = snippet.arguments.all() if arguments is None else arguments
    declared = [_omit_empty({"name": a.name, "description": a.description, "type": a.type or argtypes.TEXT},
                            "description") for a in rows]
    snap = {"name": snippet.name, "description": snippet.description, "text": snippet.text,
            "arguments": declared, "tags": _tag_list(snippet), "includes": _includes([snippet.text])}
    return _omit_empty(snap, "description", "arguments", "tags", "includes")


def for_snapshots(queryset: QuerySet[Any]) -> QuerySet[Any]:
    """`queryset` (of one entry model) with everything `snapshot_of` reads prefetched, so the drafts
    of a whole page of entries (a change list, the review queue) are snapshotted in a fixed number
    of queries, not a few per entry."""
    model = queryset.model
    if issubclass(model, Prompt):
        newest = Prefetch("resource__versions", queryset=ResourceVersion.objects.order_by("-number")[:1],
                          to_attr="_newest_versions")
        messages = PromptMessage.objects.select_related("resource").prefetch_related(newest)
        return queryset.prefetch_related("arguments", Prefetch("messages", queryset=messages))
    if issubclass(model, ResourceTemplate):
        return queryset.prefetch_related("variables")
    if issubclass(model, Snippet):
        return queryset.prefetch_related("arguments")
    return queryset


def snapshot_of(entry: VersionedEntry, payloads: Payloads | None = None) -> dict[str, Any]:
    """The snapshot the draft of `entry` would publish; `payloads` collects the bytes it references."""
    if isinstance(entry, Prompt):
        return snapshot_prompt(entry, payloads)
    if isinstance(entry, Resource):
        return snapshot_resource(entry, payloads)
    if isinstance(entry, ResourceTemplate):
        return snapshot_template(entry)
    if isinstance(entry, Snippet):
        return snapshot_snippet(entry)
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


def _diff_text(sha256: str) -> str | None:
    found = _recent_texts.get(sha256)
    if found is not None:
        return found
    try:
        return content.text(sha256)
    except (ContentMissing, UnicodeDecodeError, ValueError):
        return None


class TooLargeToDiff(ValueError):
    """A stored document over DIFF_DOCUMENT_LIMIT: a diff shows it by size and hash."""


def diff_loader(payloads: Payloads | None = None, limit: int = DIFF_DOCUMENT_LIMIT) -> Loader:
    """The Loader of the pages that show a diff: a draft's own text (`payloads`), a text hashed lately,
    then the content store, never more than `limit` bytes (TooLargeToDiff; the stored size is
    checked before anything is read). Raises ContentMissing for text that is in none of them."""

    def load(sha256: str, encoding: str) -> str:
        raw = (payloads or {}).get(sha256)
        if raw is None:
            found = _recent_texts.get(sha256) if encoding == "text" else None
            if found is not None:
                return found
            if content.stored_size(sha256) > limit:
                raise TooLargeToDiff(sha256)
            raw = content.read(sha256)
        if len(raw) > limit:
            raise TooLargeToDiff(sha256)
        return raw.decode("utf-8") if encoding == "text" else base64.b64encode(raw).decode("ascii")

    return load


def _readable(value: Any) -> Any:
    """A snapshot as the audit log records it: short stored texts as `text` again, and stored bytes as
    one `blob` (`data` in image and audio blocks) summary "<N bytes, sha256 ...>", so each document
    is one readable change and a reader can tell a long text (its reference) from a file."""
    if isinstance(value, list):
        return [_readable(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {k: _readable(v) for k, v in value.items()}
    if not isinstance(out.get("sha256"), str):
        return out
    if out.get("encoding") == "text":
        if (out.get("size") or 0) <= DIFF_TEXT_LIMIT:
            text = _diff_text(out["sha256"])
            if text is not None:
                out.pop("sha256")
                out.pop("encoding")
                out["text"] = text
        return out
    sha = out.pop("sha256")
    out.pop("encoding", None)
    summary = f"<{out.get('size', 0)} bytes, sha256 {sha[:12]}>"
    out["data" if out.get("type") in ("image", "audio") else "blob"] = summary
    return out


def diff_snapshots(before: dict[str, Any] | None, after: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Field-level changes between two snapshots, e.g. {'field': 'messages[2].content.text', ...}.

    Stored bytes and (older) base64 payloads are summarised by size and hash, and texts up to
    DIFF_TEXT_LIMIT recorded as text (see `_readable`), so the audit log stays readable.
    """
    flat_before: dict[str, Any] = {}
    flat_after: dict[str, Any] = {}
    _flatten(_readable(before or {}), "", flat_before)
    _flatten(_readable(after or {}), "", flat_after)
    changes = []
    for field in sorted(set(flat_before) | set(flat_after), key=_field_order):
        old, new = flat_before.get(field), flat_after.get(field)
        if old != new:
            changes.append({"field": field, "before": _summarise(field, old), "after": _summarise(field, new)})
    return changes


def _field_order(field: str) -> str:
    return re.sub(r"\[(\d+)\]", lambda m: f"[{int(m.group(1)):06d}]", field)


def _summarise(field: str, value: Any) -> Any:
    # A long text's reference keeps its whole hash, so the audit page can load both texts.
    if isinstance(value, str) and (field.endswith(".data") or field.endswith("blob")) and len(value) > 64:
        raw = base64.b64decode(value)
        return f"<{len(raw)} bytes, sha256 {hashlib.sha256(raw).hexdigest()[:12]}>"
    return value
