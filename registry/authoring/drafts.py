"""Write a draft (the working copy) from plain data, and read it back as plain data.

"Draft data" is one dict per entry in the models' own vocabulary, used by the importer, the
exporter and "restore draft from vN" in the admin:

    prompt:   {name, title, description, folder, tags: [str],
               arguments: [{name, title, description, required, default, suggestions: [str],
                            type, choices: [str], min_length, max_length, pattern, minimum, maximum}],
               messages:  [{role, kind, ...}]}                       (see MESSAGE_FIELDS)
    resource: {uri, name, title, description, folder, mime_type, tags, audience, priority, text, data}
    template: {uri_template, name, title, description, folder, mime_type, tags, audience, priority, body,
               variables: [{name, description, suggestions: [str]}]}
    snippet:  {name, description, folder, tags, text, arguments: [{name, description, type}]}

Bytes are `bytes` (or None, or a `registry.storage.blobs.Stored` reference to bytes already in the
content store: restoring a version copies nothing); a message that embeds or links a registry resource names it by
URI in `resource_uri`. `apply_*` set the keys present in `data` and leave the others alone;
a list given for arguments, messages or variables replaces the child rows in order.

`draft_data(entry)` returns only what matters for the entry's served content (a linked
message's stale inline fields are left out), so two drafts with equal draft data publish the
same snapshot, and its folder (registry/formats/folders.py), which is in no snapshot: a draft
that differs only by folder publishes the same snapshot, and moving it is audited apart
(`record_folder_change`). `apply_*` write no audit rows; `save_draft` (importer, REST API) and
`restore_draft` (admin) apply and audit in one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.utils import timezone
from django.utils.translation import gettext as _

from registry import refusals, roles
from registry.audit import User, actor_name, write_audit
from registry.authoring.snapshots import diff_snapshots, snapshot_of
from registry.changes import service_transaction
from registry.errors import DraftConflict, RegistryError
from registry.formats.argtypes import plain_number
from registry.formats.folders import normalise_folder
from registry.formats.rendering import normalise_newlines
from registry.formats.uris import normalize_uri
from registry.models import (
    AuditAction,
    AuditEntry,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    Snippet,
    SnippetArgument,
    TemplateVariable,
    VersionedEntry,
)
from registry.storage import blobs as content

PROMPT_FIELDS = ("name", "title", "description")
RESOURCE_FIELDS = ("uri", "name", "title", "description", "mime_type", "audience", "priority", "text", "data")
TEMPLATE_FIELDS = ("uri_template", "name", "title", "description", "mime_type", "audience", "priority", "body")
# An argument's type and bounds, with the values an untyped argument has (see registry/formats/argtypes.py).
ARGUMENT_TYPE_DEFAULTS: dict[str, Any] = {"type": "text", "choices": [], "min_length": None, "max_length": None,
                                          "pattern": "", "minimum": None, "maximum": None}
ARGUMENT_FIELDS = ("name", "title", "description", "required", "default", "suggestions", *ARGUMENT_TYPE_DEFAULTS)
# Draft-data key -> the key of the argument's snapshot spec.
_SNAPSHOT_BOUNDS = {"choices": "choices", "min_length": "minLength", "max_length": "maxLength", "pattern": "pattern",
                    "minimum": "minimum", "maximum": "maximum"}
VARIABLE_FIELDS = ("name", "description", "suggestions")
SNIPPET_FIELDS = ("name", "description", "text")
SNIPPET_ARGUMENT_FIELDS = ("name", "description", "type")
# Which message fields carry meaning for each kind of content (inline / linked to a registry resource).
MESSAGE_FIELDS: dict[tuple[str, bool], tuple[str, ...]] = {
    ("text", False): ("text",),
    ("image", False): ("mime_type", "data"),
    ("audio", False): ("mime_type", "data"),
    ("resource", False): ("uri", "mime_type", "text", "data"),
    ("resource", True): ("resource_uri",),
    ("resource_link", False): ("uri", "link_name", "mime_type"),
    ("resource_link", True): ("resource_uri", "link_name"),
}


# ---------------------------------------------------------------------------------------- helpers
def _bytes(value: bytes | memoryview | content.Stored | None) -> bytes | content.Stored | None:
    if isinstance(value, content.Stored):
        return value
    return bytes(value) if value else None


def _text(value: str | None) -> str:
    """A text of draft data as stored: LF line breaks, nothing else changed
    (see registry.admin.forms.fields.NewlinesMixin)."""
    return normalise_newlines(value or "")


def _lines(values: Iterable[str]) -> str:
    return "\n".join(v.strip() for v in values if v and v.strip())


def _suggestions(text: str) -> list[str]:
    return [line.strip() for line in (text or "").splitlines() if line.strip()]


def normalise_tags(tags: Iterable[str] | str) -> list[str]:
    if isinstance(tags, str):
        tags = tags.split(",")
    return sorted({t.strip().lower() for t in tags if t and t.strip()})


def audience_value(audience: Iterable[str] | str | None) -> str:
    """['assistant', 'user'] -> 'user,assistant' (the stored choice)."""
    if not audience:
        return ""
    if isinstance(audience, str):
        audience = audience.split(",")
    chosen = {a.strip() for a in audience if a.strip()}
    return ",".join(a for a in ("user", "assistant") if a in chosen)


# ---------------------------------------------------------------------------------------- read
def _message_data(message: PromptMessage, resource_uris: Mapping[int, str]) -> dict[str, Any]:
    linked = message.resource_id is not None and message.kind in ("resource", "resource_link")
    item: dict[str, Any] = {"role": message.role, "kind": message.kind}
    for name in MESSAGE_FIELDS[(message.kind, linked)]:
        if name == "resource_uri":
            item[name] = resource_uris[message.resource_id]  # type: ignore[index]
        elif name == "data":
            item[name] = _bytes(message.data)
        else:
            item[name] = getattr(message, name)
    if message.data_sha256 and "text" in item:  # bytes win over text, as in the snapshot
        item["text"] = ""
    return item


def draft_data(entry: VersionedEntry, *, resource_uris: Mapping[int, str] | None = None) -> dict[str, Any]:
    """The draft of `entry` as plain data (see the module docstring).

    `resource_uris` (pk -> URI of every registry resource) spares the per-prompt query for the
    URIs of linked resources when many drafts are read at once (export, import).
    """
    tags, folder = normalise_tags(entry.tags), entry.folder
    if isinstance(entry, Prompt):
        arguments = [
            {"name": a.name, "title": a.title, "description": a.description, "required": a.required,
             "default": a.default, "suggestions": a.suggestion_list, "type": a.type or "text",
             "choices": a.choice_list, "min_length": a.min_length, "max_length": a.max_length, "pattern": a.pattern,
             "minimum": plain_number(a.minimum), "maximum": plain_number(a.maximum)}
            for a in entry.arguments.all()
        ]
        messages = list(entry.messages.all())
        linked_ids = {m.resource_id for m in messages if m.resource_id}
        if resource_uris is not None and linked_ids <= resource_uris.keys():
            uris: Mapping[int, str] = resource_uris
        else:
            uris = dict(Resource.objects.filter(pk__in=linked_ids).values_list("pk", "uri")) if linked_ids else {}
        return {"name": entry.name, "title": entry.title, "description": entry.description, "folder": folder,
                "tags": tags, "arguments": arguments, "messages": [_message_data(m, uris) for m in messages]}
    if isinstance(entry, Resource):
        data = entry.data
        return {"uri": entry.uri, "name": entry.name, "title": entry.title, "description": entry.description,
                "folder": folder, "mime_type": entry.mime_type, "tags": tags, "audience": entry.audience,
                "priority": entry.priority,
                "text": "" if data else entry.text, "data": data}
    if isinstance(entry, ResourceTemplate):
        variables = [{"name": v.name, "description": v.description, "suggestions": v.suggestion_list}
                     for v in entry.variables.all()]
        return {"uri_template": entry.uri_template, "name": entry.name, "title": entry.title,
                "description": entry.description, "folder": folder, "mime_type": entry.mime_type, "tags": tags,
                "audience": entry.audience, "priority": entry.priority, "body": entry.body,
                "variables": sorted(variables, key=lambda v: v["name"])}
    if isinstance(entry, Snippet):
        return {"name": entry.name, "description": entry.description, "folder": folder, "tags": tags,
                "text": entry.text,
                "arguments": [{"name": a.name, "description": a.description, "type": a.type or "text"}
                              for a in entry.arguments.all()]}
    raise TypeError(f"not a registry entry: {entry!r}")


# ---------------------------------------------------------------------------------------- write
def assign_fields(entry: VersionedEntry, data: Mapping[str, Any], names: Iterable[str]) -> None:
    """Set the entry's own fields from draft data, unsaved (the bulk importer saves many at once)."""
    for name in names:
        if name in data:
            value = data[name]
            if name == "audience":
                value = audience_value(value)
            elif name == "data":
                value = _bytes(value)
            elif value is None and name != "priority":
                value = ""
            elif isinstance(value, str):
                value = normalise_newlines(value)
            setattr(entry, name, value)
    if "tags" in data:
        entry.tags = ", ".join(normalise_tags(data["tags"]))
    if "folder" in data:
        entry.folder = normalise_folder(data["folder"])


def _set_fields(entry: VersionedEntry, data: Mapping[str, Any], names: Iterable[str]) -> None:
    assign_fields(entry, data, names)
    entry.save()  # VersionedEntry.save normalises tags; a new entry gets its pk here


def resources_by_uri(uris: set[str]) -> dict[str, Resource]:
    """Registry resources by the URI a draft names them with (any spelling of the stored URI)."""
    spelled = {uri: normalize_uri(uri) for uri in uris}
    stored = {r.uri: r for r in Resource.objects.filter(uri__in=set(spelled.values()))} if uris else {}
    found = {uri: stored[normal] for uri, normal in spelled.items() if normal in stored}
    missing = sorted(uris - set(found))
    if missing:
        raise RegistryError("No registry resource with URI " + ", ".join(missing) + ".")
    return found


def remember_children(entry: VersionedEntry, relation: str, rows: list[Any]) -> None:
    """Make `entry.<relation>.all()` return the rows just written, without a query.

    Replacing child rows leaves any prefetched copy stale; what was written is exactly what a
    fresh read would return (same order), so it becomes the entry's cached children and the
    snapshot, diff and validation that follow in the same save need not read them back.
    """
    manager = getattr(entry, relation)
    name = manager.field.remote_field.cache_name
    getattr(entry, "_prefetched_objects_cache", {}).pop(name, None)
    cached = manager.get_queryset()
    cached._result_cache = list(rows)
    cached._prefetch_done = True
    cache = getattr(entry, "_prefetched_objects_cache", None)
    if cache is None:
        cache = entry._prefetched_objects_cache = {}  # type: ignore[attr-defined]
    cache[name] = cached


def argument_rows(prompt: Prompt, arguments: Iterable[Mapping[str, Any]]) -> list[PromptArgument]:
    """Unsaved argument rows of `prompt`, in order, from draft data."""
    return [
        PromptArgument(
            prompt=prompt, position=position, name=arg["name"], title=_text(arg.get("title")),
            description=_text(arg.get("description")),
            required=bool(arg.get("required", True)), default=_text(arg.get("default")),
            suggestions=_lines(arg.get("suggestions") or ()),
            type=arg.get("type") or "text", choices=_lines(arg.get("choices") or ()),
            min_length=arg.get("min_length"), max_length=arg.get("max_length"), pattern=_text(arg.get("pattern")),
            minimum=arg.get("minimum"), maximum=arg.get("maximum"),
        )
        for position, arg in enumerate(arguments)
    ]


def message_rows(prompt: Prompt, messages: Iterable[Mapping[str, Any]],
                 resources: Mapping[str, Resource]) -> list[PromptMessage]:
    """Unsaved message rows of `prompt`, in order; `resources` maps each `resource_uri` to its resource."""
    return [
        PromptMessage(  # type: ignore[misc]  # `data` is a property Model() sets
            prompt=prompt, position=position, role=message.get("role") or "user",
            kind=message.get("kind") or "text", text=_text(message.get("text")), uri=_text(message.get("uri")),
            resource=resources[message["resource_uri"]] if message.get("resource_uri") else None,
            mime_type=_text(message.get("mime_type")), data=_bytes(message.get("data")),
            link_name=_text(message.get("link_name")),
        )
        for position, message in enumerate(messages)
    ]


def variable_rows(template: ResourceTemplate, variables: Iterable[Mapping[str, Any]]) -> list[TemplateVariable]:
    """Unsaved variable rows of `template` from draft data."""
    return [
        TemplateVariable(template=template, name=v["name"], description=_text(v.get("description")),
                         suggestions=_lines(v.get("suggestions") or ()))
        for v in variables
    ]


def snippet_argument_rows(snippet: Snippet, arguments: Iterable[Mapping[str, Any]]) -> list[SnippetArgument]:
    """Unsaved argument rows of `snippet`, in order, from draft data."""
    return [
        SnippetArgument(snippet=snippet, position=position, name=arg["name"],
                        description=_text(arg.get("description")), type=arg.get("type") or "text")
        for position, arg in enumerate(arguments)
    ]


@service_transaction
def apply_prompt(prompt: Prompt, data: Mapping[str, Any]) -> Prompt:
    _set_fields(prompt, data, PROMPT_FIELDS)
    if "arguments" in data:
        prompt.arguments.all().delete()
        arguments = PromptArgument.objects.bulk_create(argument_rows(prompt, data["arguments"]))
        remember_children(prompt, "arguments", arguments)
    if "messages" in data:
        resources = resources_by_uri({m["resource_uri"] for m in data["messages"] if m.get("resource_uri")})
        prompt.messages.all().delete()
        rows = message_rows(prompt, data["messages"], resources)
        for row in rows:
            row.store_pending()  # bytes go to the content store before the rows that reference them
        remember_children(prompt, "messages", PromptMessage.objects.bulk_create(rows))
    return prompt


@service_transaction
def apply_resource(resource: Resource, data: Mapping[str, Any]) -> Resource:
    _set_fields(resource, data, RESOURCE_FIELDS)
    return resource


@service_transaction
def apply_template(template: ResourceTemplate, data: Mapping[str, Any]) -> ResourceTemplate:
    _set_fields(template, data, TEMPLATE_FIELDS)
    if "variables" in data:
        template.variables.all().delete()
        variables = TemplateVariable.objects.bulk_create(variable_rows(template, data["variables"]))
        remember_children(template, "variables", sorted(variables, key=lambda v: v.name))
    return template


@service_transaction
def apply_snippet(snippet: Snippet, data: Mapping[str, Any]) -> Snippet:
    _set_fields(snippet, data, SNIPPET_FIELDS)
    if "arguments" in data:
        snippet.arguments.all().delete()
        arguments = SnippetArgument.objects.bulk_create(snippet_argument_rows(snippet, data["arguments"]))
        remember_children(snippet, "arguments", arguments)
    return snippet


def apply_data(entry: VersionedEntry, data: Mapping[str, Any]) -> VersionedEntry:
    if isinstance(entry, Prompt):
        return apply_prompt(entry, data)
    if isinstance(entry, Resource):
        return apply_resource(entry, data)
    if isinstance(entry, ResourceTemplate):
        return apply_template(entry, data)
    if isinstance(entry, Snippet):
        return apply_snippet(entry, data)
    raise TypeError(f"not a registry entry: {entry!r}")


def conflict_message(entry: VersionedEntry, expected: int) -> str:
    when = timezone.localtime(entry.updated_at).strftime("%Y-%m-%d %H:%M:%S %Z") if entry.updated_at else "?"
    who = entry.updated_by or _("someone")
    return _("The draft of %(key)s was changed by %(who)s at %(when)s after you opened it (revision %(revision)s; "
             "yours was based on revision %(expected)s). Nothing was saved: reload it to see their changes, then "
             "apply yours again.") % {"key": entry.key, "who": who, "when": when, "revision": entry.revision,
                                       "expected": expected}


def lock_draft(entry: VersionedEntry, *, expected_revision: int | None = None) -> VersionedEntry:
    """Lock the entry's row for this transaction and load its current values into `entry`.

    Whatever a caller read before may be stale (another worker saved meanwhile); the diff, the
    audit's "before" and the fields a partial update leaves alone must come from the locked row.
    `expected_revision` (an editor's form, an API If-Match) refuses a save based on an older
    revision with DraftConflict, so nobody silently reverts another person's edit.
    """
    type(entry).objects.select_for_update().filter(pk=entry.pk).values_list("pk", flat=True).first()
    entry.refresh_from_db()
    if expected_revision is not None and expected_revision != entry.revision:
        raise DraftConflict(conflict_message(entry, expected_revision), current_revision=entry.revision)
    return entry


@service_transaction
def save_draft(
    entry: VersionedEntry,
    data: Mapping[str, Any],
    *,
    acting_user: Any,
    actor: str | None = None,
    note: str = "",
    expected_revision: int | None = None,
) -> list[dict[str, Any]]:
    """Apply `data` to the draft (a new entry if unsaved) and audit it; returns the audited field diff.

    An existing draft is locked and re-read first (`lock_draft`), so concurrent partial updates of
    different fields both survive and the audit shows the real "before". Tags are part of the
    snapshot, so a tag change is audited like any other field and, like any draft edit, changes
    nothing clients see until it is published. A folder change is audited in a row of its own
    (`record_folder_change`) and its change is returned with the others.
    """
    before_snapshot, before_folder = None, None
    if entry.pk is not None:
        lock_draft(entry, expected_revision=expected_revision)
        before_snapshot, before_folder = snapshot_of(entry), entry.folder
    # Team ownership: the folder it leaves (if it exists) and the one it is in afterwards.
    after_folder = normalise_folder(data["folder"]) if "folder" in data else entry.folder
    attempted = "create" if entry.pk is None else "move" if before_folder != after_folder else "edit"
    refusal = roles.folder_refusal(acting_user, [f for f in (before_folder, after_folder) if f is not None],
                                   entry=entry if entry.pk is not None else refusals.unsaved(entry.kind, data),
                                   attempted=attempted)
    if refusal is not None:
        raise refusal
    entry.updated_by = actor or actor_name(acting_user)
    apply_data(entry, data)
    row = record_draft_change(entry, before=before_snapshot, acting_user=acting_user, actor=actor, note=note)
    moved = record_folder_change(entry, before=before_folder or "", acting_user=acting_user, actor=actor, note=note)
    return [*(row.changes if row is not None else []), *(moved.changes if moved is not None else [])]


# ---------------------------------------------------------------------------------------- snapshots
def _stored(ref: Mapping[str, Any]) -> content.Stored | None:
    """Stored bytes named by a snapshot's reference (None when it holds text)."""
    if ref.get("sha256") and ref.get("encoding", "base64") == "base64":
        return content.Stored(ref["sha256"], int(ref.get("size") or 0))
    return None


def _stored_text(ref: Mapping[str, Any]) -> str:
    if ref.get("sha256"):
        return content.text(ref["sha256"]) if ref.get("encoding") == "text" else ""
    return ref.get("text", "")


def _annotation_fields(snapshot: Mapping[str, Any]) -> dict[str, Any]:
    annotations = snapshot.get("annotations") or {}
    return {"audience": audience_value(annotations.get("audience")), "priority": annotations.get("priority")}


def _linked_message(role: str, kind: str, block: Mapping[str, Any], uri: str) -> dict[str, Any] | None:
    """The message linking registry resource `uri` if that reproduces `block` exactly, else None."""
    from registry.authoring.snapshots import _message_block  # the one definition of a message's content block

    resource = Resource.objects.filter(uri=normalize_uri(uri)).first()
    if resource is None:
        return None
    link_name = block.get("name", "") if kind == "resource_link" else ""
    if link_name == resource.name:
        link_name = ""
    candidate = PromptMessage(kind=kind, resource=resource, link_name=link_name)
    if _message_block(candidate) != dict(block):
        return None
    item = {"role": role, "kind": kind, "resource_uri": uri}
    if kind == "resource_link":
        item["link_name"] = link_name
    return item


def _message_from_block(role: str, block: Mapping[str, Any]) -> dict[str, Any]:
    kind = block["type"]
    if kind == "text":
        return {"role": role, "kind": "text", "text": block.get("text", "")}
    if kind in ("image", "audio"):
        return {"role": role, "kind": kind, "mime_type": block.get("mimeType", ""),
                "data": _stored({"encoding": "base64", **block})}
    if kind == "resource":
        inner = block["resource"]
        linked = _linked_message(role, kind, block, inner.get("uri", ""))
        if linked is not None:
            return linked
        return {"role": role, "kind": kind, "uri": inner.get("uri", ""), "mime_type": inner.get("mimeType", ""),
                "text": _stored_text(inner), "data": _stored(inner)}
    if kind == "resource_link":
        linked = _linked_message(role, kind, block, block.get("uri", ""))
        if linked is not None:
            return linked
        name = block.get("name", "")
        return {"role": role, "kind": kind, "uri": block.get("uri", ""),
                "link_name": "" if name == block.get("uri") else name, "mime_type": block.get("mimeType", "")}
    raise RegistryError(f"Unknown content type {kind!r} in the snapshot.")


def snapshot_data(entry: VersionedEntry, snapshot: Mapping[str, Any]) -> dict[str, Any]:
    """Draft data that reproduces `snapshot` (a published version of `entry`), tags included."""
    return {**_snapshot_fields(entry, snapshot), "tags": list(snapshot.get("tags") or ())}


def _snapshot_fields(entry: VersionedEntry, snapshot: Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(entry, Prompt):
        arguments = [
            {"name": a["name"], "title": a.get("title", ""), "description": a.get("description", ""),
             "required": bool(a.get("required")), "default": a.get("default", ""),
             "suggestions": list(a.get("suggestions", ())), "type": a.get("type", "text"),
             **{key: a.get(spec_key, ARGUMENT_TYPE_DEFAULTS[key]) for key, spec_key in _SNAPSHOT_BOUNDS.items()},
             "choices": list(a.get("choices", ()))}
            for a in snapshot.get("arguments", [])
        ]
        messages = [_message_from_block(m["role"], m["content"]) for m in snapshot.get("messages", [])]
        return {"name": snapshot["name"], "title": snapshot.get("title", ""),
                "description": snapshot.get("description", ""), "arguments": arguments, "messages": messages}
    if isinstance(entry, Resource):
        return {"uri": snapshot["uri"], "name": snapshot.get("name", ""), "title": snapshot.get("title", ""),
                "description": snapshot.get("description", ""), "mime_type": snapshot.get("mimeType", ""),
                **_annotation_fields(snapshot), "text": _stored_text(snapshot), "data": _stored(snapshot)}
    if isinstance(entry, ResourceTemplate):
        variables = [{"name": v["name"], "description": v.get("description", ""),
                      "suggestions": list(v.get("suggestions", ()))} for v in snapshot.get("variables", [])]
        return {"uri_template": snapshot["uriTemplate"], "name": snapshot.get("name", ""),
                "title": snapshot.get("title", ""), "description": snapshot.get("description", ""),
                "mime_type": snapshot.get("mimeType", ""), **_annotation_fields(snapshot),
                "body": snapshot.get("body", ""), "variables": variables}
    if isinstance(entry, Snippet):
        arguments = [{"name": a["name"], "description": a.get("description", ""), "type": a.get("type", "text")}
                     for a in snapshot.get("arguments", [])]
        return {"name": snapshot["name"], "description": snapshot.get("description", ""),
                "text": snapshot.get("text", ""), "arguments": arguments}
    raise TypeError(f"not a registry entry: {entry!r}")


def apply_snapshot(entry: VersionedEntry, snapshot: Mapping[str, Any]) -> VersionedEntry:
    """Overwrite the draft of `entry` with a published version's content, tags included.

    Embedded resources and links become links to the registry resource again when that
    reproduces the version's content exactly; otherwise they are restored inline.
    """
    return apply_data(entry, snapshot_data(entry, snapshot))


@service_transaction
def restore_draft(entry: VersionedEntry, version_number: int, *, acting_user: Any, note: str = "") -> VersionedEntry:
    """Replace the draft with version `version_number` and audit it (action restore_draft)."""
    version = entry.versions.filter(number=version_number).first()
    if version is None:
        raise RegistryError(f"{entry.key} has no version {version_number}.")
    lock_draft(entry)
    roles.require_folder_editor(acting_user, entry, attempted="restore")
    before = snapshot_of(entry)
    entry.updated_by = actor_name(acting_user)
    apply_snapshot(entry, version.snapshot)
    write_audit(
        entry=entry, action=AuditAction.RESTORE_DRAFT, acting_user=acting_user, note=note,
        from_version=version.number, changes=diff_snapshots(before, snapshot_of(entry)),
    )
    return entry


def normalised(data: Mapping[str, Any]) -> dict[str, Any]:
    """`data` as `draft_data` would return it once applied (tags and suggestions tidied)."""
    out = dict(data)
    if "tags" in out:
        out["tags"] = normalise_tags(out["tags"])
    if "folder" in out:
        out["folder"] = normalise_folder(out["folder"])
    if "audience" in out:
        out["audience"] = audience_value(out["audience"])
    for children in ("arguments", "variables"):
        if children in out:
            out[children] = [
                {**child, "suggestions": _suggestions(_lines(child.get("suggestions") or ()))}
                for child in out[children]
            ]
    if "arguments" in out:
        out["arguments"] = [
            {**ARGUMENT_TYPE_DEFAULTS, **arg, "type": arg.get("type") or "text",
             "choices": _suggestions(_lines(arg.get("choices") or ())), "pattern": arg.get("pattern") or "",
             "minimum": plain_number(arg.get("minimum")), "maximum": plain_number(arg.get("maximum"))}
            for arg in out["arguments"]
        ]
    if "variables" in out:
        out["variables"] = sorted(out["variables"], key=lambda v: v["name"])
    return out


def record_draft_change(
    entry: VersionedEntry,
    *,
    before: dict[str, Any] | None,
    acting_user: User,
    actor: str | None = None,
    note: str = "",
) -> AuditEntry | None:
    """Audit an edit of the working copy (call inside the saving transaction). Drafts announce nothing."""
    after = snapshot_of(entry)
    changes = diff_snapshots(before, after)
    if before is not None and not changes:
        return None
    return write_audit(
        entry=entry, action=AuditAction.CREATE if before is None else AuditAction.EDIT,
        acting_user=acting_user, actor=actor, note=note, changes=changes,
    )


def record_deletion(entry: VersionedEntry, *, snapshot: dict[str, Any], acting_user: User,
                    note: str = "") -> AuditEntry:
    """Audit the deletion of a never-published entry (published ones are archived instead); refused
    (FolderOwnershipDenied) in a folder owned by a team `acting_user` is not in."""
    roles.require_folder_editor(acting_user, entry, attempted="delete")
    return write_audit(entry=entry, action=AuditAction.DELETE, acting_user=acting_user, note=note,
                       changes=diff_snapshots(snapshot, None))


def record_folder_change(entry: VersionedEntry, *, before: str, acting_user: User, actor: str | None = None,
                         note: str = "") -> AuditEntry | None:
    """Audit a move of `entry` from folder `before` (inside the saving transaction); None if unmoved."""
    after = entry.folder
    if before == after:
        return None
    return write_audit(entry=entry, action=AuditAction.FOLDER_MOVED, acting_user=acting_user, actor=actor,
                       note=note, changes=[{"field": "folder", "before": before, "after": after}])
