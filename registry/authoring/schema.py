"""What a snapshot of each kind carries: one schema per kind, read by everything that needs its fields.

registry/authoring/snapshots.py writes snapshots; this module says what is in them. Every reader that needs
"the fields of a prompt, a resource or a template" takes them from here instead of keeping its own
list, so a field added to snapshots cannot be silently left out of one of them:

- the diff (registry/admin/diff/) shows exactly these fields, with these labels, compared and
  displayed as `shows` says, and keys it does not find here only under "Other fields";
- the listing (registry/authoring/listing.py) copies the keys in `listed` into the list items clients get;
- the prompts-as-code format (registry/portable/format.py) accepts the `portable` keys as an entry's keys.

tests/registry/test_snapshot_schema.py builds real snapshots of every kind with every field set
and fails when a key they carry has no field here, or a change of it does not show in the diff.

Documents are references into the content store (`{"sha256", "size", "encoding"}`, see
registry/authoring/snapshots.py): one `DOCUMENT` field stands for the keys of a reference (`parts`) inside
the mapping `key` names ("" for the top level of a resource snapshot), so the diff compares and
shows the document as one thing (its text, or its size, type and hash), never two hashes.
Inline `text`/`blob`/`data` parts are the shape of audit records and of snapshots written before
the content store; they are parts of the same document.

A field names its label by the admin's edit form field (`form`: "FormClass.field") or by its
own text (`label`, for keys no form field shows); the admin turns them into words
(registry/admin/schema_labels.py), so this module knows nothing of forms. No database access.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext_noop

# How a value compares and reads in a diff.
VALUE = "value"  # a short value as it is (names, URIs, numbers)
TEXT = "text"  # prose, a body or a pattern: a long one gets an inline word diff
FLAG = "flag"  # True/False, shown as Yes/No
LIST = "list"  # short strings joined with commas (tags)
LINES = "lines"  # values one per line (suggestions, choices)
CHOICE = "choice"  # a coded value shown by its label (`choices` names the set)
DOCUMENT = "document"  # a content-store reference: text diffed, bytes as size, type and hash


@dataclass(frozen=True)
class Field:
    key: str  # the snapshot key; dotted inside a mapping ("annotations.audience"); a DOCUMENT's mapping
    form: str = ""  # "FormClass.field" whose label editors see
    label: str = ""  # gettext_noop text, for keys no form field shows
    shows: str = VALUE
    choices: str = ""  # CHOICE: "role", "content_type", "argument_type" or "audience"
    default: Any = None  # what an absent key means (an argument without `type` is text)
    portable: tuple[str, ...] = ()  # its keys in the prompts-as-code YAML
    parts: tuple[str, ...] = ()  # DOCUMENT: the keys of the reference inside `key`
    binary_form: str = ""  # DOCUMENT: the form field labelling it when it holds bytes (an upload)

    def covers(self, path: str) -> bool:
        """Whether snapshot key `path` (relative to the schema's mapping) belongs to this field."""
        if self.shows == DOCUMENT:
            prefix = f"{self.key}." if self.key else ""
            return path.startswith(prefix) and path[len(prefix):] in self.parts
        return path == self.key


@dataclass(frozen=True)
class Table:
    """A list of rows with unique names (arguments, variables): one row each in the diff."""

    key: str
    heading: str  # gettext_noop
    singular: str  # gettext_noop
    columns: tuple[Field, ...]
    identity: str = "name"
    listed: tuple[str, ...] = ()  # columns a list item carries
    portable: str = ""
    always: tuple[str, ...] | None = None  # columns a diff shows even when no row uses them (None: all)

    def column(self, key: str) -> Field | None:
        return next((c for c in self.columns if c.key == key), None)


@dataclass(frozen=True)
class Messages:
    """A prompt's messages: `role` and a `content` block whose keys depend on its `type`."""

    key: str
    fields: tuple[Field, ...]  # keys relative to one message
    portable: str = ""

    def field_for(self, path: str) -> Field | None:
        return next((f for f in self.fields if f.covers(path)), None)


@dataclass(frozen=True)
class Schema:
    kind: str
    fields: tuple[Field, ...]  # in the order of the edit form
    tables: tuple[Table, ...] = ()
    messages: Messages | None = None
    listed: tuple[str, ...] = ()  # keys a list item (resources/list, ...) carries, in its order
    portable_extra: tuple[str, ...] = ()  # format-only keys of an entry (labels, released)

    def field_for(self, path: str) -> Field | None:
        """The field that snapshot key `path` (dotted, no list indexes) belongs to."""
        return next((f for f in self.fields if f.covers(path)), None)

    def table(self, key: str) -> Table | None:
        return next((t for t in self.tables if t.key == key), None)

    @property
    def row_keys(self) -> frozenset[str]:
        """Keys holding lists of rows (tables and messages), which are compared row by row."""
        keys = {t.key for t in self.tables}
        if self.messages is not None:
            keys.add(self.messages.key)
        return frozenset(keys)

    def portable_keys(self) -> tuple[str, ...]:
        """An entry's keys in the prompts-as-code YAML: its fields', its lists', then the format's own."""
        keys = [key for f in self.fields for key in f.portable]
        keys += [t.portable for t in self.tables if t.portable]
        if self.messages is not None and self.messages.portable:
            keys.append(self.messages.portable)
        return tuple(dict.fromkeys(keys + list(self.portable_extra)))

    def covered(self, path: str) -> Field | None:
        """The field of a full snapshot path ('arguments[2].choices', 'messages[1].content.sha256')."""
        head, _, rest = path.partition("[")
        if rest:
            _index, _, inner = rest.partition("].")
            table = self.table(head)
            if table is not None:
                return table.column(inner)
            if self.messages is not None and head == self.messages.key:
                return self.messages.field_for(inner)
            return None
        return self.field_for(path)


# ------------------------------------------------------------------------------------ the kinds

_DESCRIBED = (  # what resources and templates share, after their key field
    Field("name", "ResourceForm.name", portable=("name",)),
    Field("title", "ResourceForm.title", portable=("title",)),
    Field("description", "ResourceForm.description", shows=TEXT, portable=("description",)),
    Field("tags", "ResourceForm.tags", shows=LIST, portable=("tags",)),
    Field("mimeType", "ResourceForm.mime_type", portable=("mime_type",)),
)
_ANNOTATIONS = (
    Field("annotations.audience", "ResourceForm.audience", shows=CHOICE, choices="audience", portable=("audience",)),
    Field("annotations.priority", "ResourceForm.priority", portable=("priority",)),
)
# Keys of the format, not of a snapshot: the labels to point, the released versions (export), the folder
# (organisational, nothing a client is served: registry/formats/folders.py).
_FORMAT_ONLY = ("labels", "released", "folder")
# The snippets an entry's texts reference: derived from the texts (registry/authoring/snapshots.py), so
# it has no key of its own in the prompts-as-code YAML; shown in diffs as what a release brings in.
_INCLUDES = Field("includes", label=gettext_noop("Snippets included"), shows=LIST)

PROMPT = Schema(
    kind="prompt",
    fields=(
        Field("name", "PromptForm.name", portable=("name",)),
        Field("title", "PromptForm.title", portable=("title",)),
        Field("description", "PromptForm.description", shows=TEXT, portable=("description",)),
        Field("tags", "PromptForm.tags", shows=LIST, portable=("tags",)),
        _INCLUDES,
    ),
    tables=(Table(
        "arguments", gettext_noop("Arguments"), gettext_noop("Argument"), portable="arguments",
        listed=("name", "title", "description", "required"),
        # the type and its bounds only when some argument has them: most prompts have none
        always=("name", "title", "description", "required", "default", "suggestions"),
        columns=(
            Field("name", "PromptArgumentForm.name", portable=("name",)),
            Field("title", "PromptArgumentForm.title", portable=("title",)),
            Field("description", "PromptArgumentForm.description", shows=TEXT, portable=("description",)),
            Field("required", "PromptArgumentForm.required", shows=FLAG, portable=("required",)),
            Field("default", "PromptArgumentForm.default", shows=TEXT, portable=("default",)),
            Field("suggestions", "PromptArgumentForm.suggestions", shows=LINES, portable=("suggestions",)),
            Field("type", "PromptArgumentForm.type", shows=CHOICE, choices="argument_type", default="text",
                  portable=("type",)),
            Field("choices", "PromptArgumentForm.choices", shows=LINES, portable=("choices",)),
            Field("minLength", "PromptArgumentForm.min_length", portable=("min_length",)),
            Field("maxLength", "PromptArgumentForm.max_length", portable=("max_length",)),
            Field("pattern", "PromptArgumentForm.pattern", shows=TEXT, portable=("pattern",)),
            Field("minimum", "PromptArgumentForm.minimum", portable=("min",)),
            Field("maximum", "PromptArgumentForm.maximum", portable=("max",)),
        ),
    ),),
    messages=Messages("messages", portable="messages", fields=(
        Field("role", "PromptMessageForm.role", shows=CHOICE, choices="role"),
        Field("content.type", "PromptMessageForm.kind", shows=CHOICE, choices="content_type"),
        Field("content.text", "PromptMessageForm.text", shows=TEXT),
        # image and audio blocks: the file is a reference in the block itself
        Field("content", "PromptMessageForm.upload", shows=DOCUMENT, parts=("sha256", "size", "data")),
        Field("content.mimeType", "PromptMessageForm.mime_type"),
        # resource links
        Field("content.uri", "PromptMessageForm.uri"),
        Field("content.name", "PromptMessageForm.link_name"),
        Field("content.title", label=gettext_noop("Title")),
        Field("content.description", label=gettext_noop("Description"), shows=TEXT),
        # embedded resources
        Field("content.resource.uri", "PromptMessageForm.uri"),
        Field("content.resource.mimeType", "PromptMessageForm.mime_type"),
        Field("content.resource", "PromptMessageForm.text", shows=DOCUMENT, binary_form="PromptMessageForm.upload",
              parts=("sha256", "size", "encoding", "text", "blob")),
        # the snippets an embedded registry resource's version includes (expanded where it is served)
        Field("content.includes", label=gettext_noop("Snippets included"), shows=LIST),
    )),
    listed=("name", "title", "description"),
    portable_extra=_FORMAT_ONLY,
)

RESOURCE = Schema(
    kind="resource",
    fields=(
        Field("uri", "ResourceForm.uri", portable=("uri",)),
        *_DESCRIBED,
        Field("", "ResourceForm.text", shows=DOCUMENT, binary_form="ResourceForm.upload",
              parts=("sha256", "size", "encoding", "text", "blob"), portable=("text", "base64", "file")),
        *_ANNOTATIONS,
        _INCLUDES,
    ),
    listed=("uri", "name", "title", "description", "mimeType", "size", "annotations"),
    portable_extra=_FORMAT_ONLY,
)

TEMPLATE = Schema(
    kind="template",
    fields=(
        Field("uriTemplate", "ResourceTemplateForm.uri_template", portable=("uri_template",)),
        *_DESCRIBED,
        Field("body", "ResourceTemplateForm.body", shows=TEXT, portable=("body",)),
        *_ANNOTATIONS,
        _INCLUDES,
    ),
    tables=(Table(
        "variables", gettext_noop("Variables"), gettext_noop("Variable"), portable="variables",
        columns=(
            Field("name", "TemplateVariableForm.name", portable=("name",)),
            Field("description", "TemplateVariableForm.description", shows=TEXT, portable=("description",)),
            Field("suggestions", "TemplateVariableForm.suggestions", shows=LINES, portable=("suggestions",)),
        ),
    ),),
    listed=("uriTemplate", "name", "title", "description", "mimeType", "annotations"),
    portable_extra=_FORMAT_ONLY,
)

SNIPPET = Schema(
    kind="snippet",
    fields=(
        Field("name", "SnippetForm.name", portable=("name",)),
        Field("description", "SnippetForm.description", shows=TEXT, portable=("description",)),
        Field("tags", "SnippetForm.tags", shows=LIST, portable=("tags",)),
        Field("text", "SnippetForm.text", shows=TEXT, portable=("text",)),
        _INCLUDES,
    ),
    tables=(Table(
        "arguments", gettext_noop("Arguments"), gettext_noop("Argument"), portable="arguments",
        columns=(
            Field("name", "SnippetArgumentForm.name", portable=("name",)),
            Field("description", "SnippetArgumentForm.description", shows=TEXT, portable=("description",)),
            Field("type", "SnippetArgumentForm.type", shows=CHOICE, choices="argument_type", default="text",
                  portable=("type",)),
        ),
    ),),
    listed=("name", "description"),
    portable_extra=_FORMAT_ONLY,
)

SCHEMAS: dict[str, Schema] = {schema.kind: schema for schema in (PROMPT, RESOURCE, TEMPLATE, SNIPPET)}


def schema_of(kind: str) -> Schema:
    """The schema of snapshots of `kind` ("prompt", "resource", "template", "snippet")."""
    return SCHEMAS[kind]


def leaf_paths(snapshot: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    """(path, value) of every leaf of a snapshot: 'arguments[2].choices', 'messages[1].content.sha256'.

    Mappings are walked into; a list of mappings is a list of rows ([n], 1-based as in the audit
    log); any other list is one value.
    """
    if isinstance(snapshot, dict):
        for key, value in snapshot.items():
            yield from leaf_paths(value, f"{path}.{key}" if path else str(key))
    elif isinstance(snapshot, list) and snapshot and all(isinstance(v, dict) for v in snapshot):
        for index, row in enumerate(snapshot, start=1):
            yield from leaf_paths(row, f"{path}[{index}]")
    else:
        yield path, snapshot
