"""Two snapshots (or an audit entry's recorded changes) -> what a person reads in a diff.

One module behind every diff the admin shows (compare page, publish / request / label / restore
confirmations, the review page, history and the audit log), so they all speak the same words:
fields in the order of the edit form and with its labels, "not set" instead of `null`,
Yes/No instead of True/False, arguments as a table, messages as chat bubbles with word-level
insertions and deletions, documents as their text diff (binary files as type, size and short
hash), and keys the schema does not know shown generically after the known ones.

Which fields there are, what they are called and how each compares is the snapshot schema's
(registry/authoring/schema.py), so every field a snapshot carries appears here. It returns plain
data (dataclasses of strings); templates render it, auto-escaped, so nothing here builds HTML.
No database access, except the document texts a page's `load` reads from the content store.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
import re
from dataclasses import dataclass, field, replace
from typing import Any, Iterable

from django.utils.translation import get_language, gettext, gettext_noop, ngettext

from registry.errors import ContentMissing
from registry.authoring.schema import (
    CHOICE,
    DOCUMENT,
    LINES,
    SCHEMAS,
    Field,
    Messages,
    Schema,
    Table,
    schema_of,
)
from registry.admin.schema_labels import binary_label, choice_labels, label_text
from registry.authoring.snapshots import DIFF_DOCUMENT_LIMIT, DIFF_TEXT_LIMIT, Loader, TooLargeToDiff

# ----------------------------------------------------------------------------------- display data


@dataclass(frozen=True)
class Value:
    """One side of a change as text; `missing` means the snapshot has nothing there ("not set")."""

    text: str = ""
    missing: bool = False
    multiline: bool = False


NOT_SET = Value(missing=True)


@dataclass(frozen=True)
class Segment:
    """A run of a word diff: "same", "ins" (only after), "del" (only before) or "gap" (elided lines)."""

    op: str
    text: str


@dataclass
class FieldChange:
    key: str
    label: str
    status: str  # "changed", "added" (nothing before) or "removed" (nothing after)
    before: Value
    after: Value
    words: list[Segment] | None = None  # long texts: one inline word diff instead of two columns

    @property
    def summary(self) -> str:
        return status_phrase(self.status, self.label)


@dataclass
class Cell:
    before: Value | None  # None: not recorded (an audit entry keeps changed cells only)
    after: Value | None
    changed: bool

    @property
    def shown(self) -> Value | None:
        """The value to show in an unchanged cell: the current one, or the old one of a removed row."""
        return self.after if self.after is not None else self.before


@dataclass
class TableRow:
    title: str
    status: str  # "changed", "added", "removed" or "same"
    cells: list[Cell]


@dataclass
class TableChange:
    """Arguments of a prompt or variables of a template: one row each, changed cells marked."""

    key: str
    label: str
    singular: str
    columns: list[str]
    rows: list[TableRow]

    def summaries(self) -> list[str]:
        out = []
        for row in self.rows:
            if row.status in ("added", "removed"):
                out.append(status_phrase(row.status, f"{self.singular} {row.title}"))
            elif row.status == "changed":
                names = [in_sentence(name) for name, cell in zip(self.columns, row.cells) if cell.changed]
                out.append(status_phrase("changed", f"{self.singular} {row.title} {join_words(names)}"))
        return out


@dataclass
class MessageChange:
    number: int  # position after the change (before, for a removed message)
    was: int | None  # position before, when it moved
    status: str  # "changed", "added", "removed"
    role_key: str  # "user" / "assistant", for styling the bubble
    role: Value
    role_before: Value | None  # set when the role changed
    kind: Value
    words: list[Segment]  # the text (or embedded text), word-diffed
    fields: list[FieldChange]  # other content fields that changed: file, URI, MIME type, ...
    kind_value: str = ""  # the content type's own value ("text", "image", ...)

    @property
    def kind_key(self) -> str:
        """'text', 'image', ... whatever language the kind's label is shown in."""
        return self.kind_value

    @property
    def changed_parts(self) -> list[str]:
        parts = [gettext("role")] if self.role_before is not None else []
        if any(s.op in ("ins", "del") for s in self.words):
            parts.append(gettext("text"))
        parts += [in_sentence(f.label) for f in self.fields]
        return parts


@dataclass
class Section:
    kind: str  # "fields", "table" or "messages"
    title: str = ""
    fields: list[FieldChange] = field(default_factory=list)
    table: TableChange | None = None
    messages: list[MessageChange] = field(default_factory=list)


@dataclass
class EntryDiff:
    before_name: str
    after_name: str
    sections: list[Section]
    partial: bool = False  # built from recorded changes: unchanged parts are unknown, not "not set"

    @property
    def empty(self) -> bool:
        return not self.sections

    @property
    def all_new(self) -> bool:
        """Nothing before (a first release, a new entry): the page says so once instead of "new" everywhere."""
        statuses = self._statuses()
        return bool(statuses) and all(status == "added" for status in statuses)

    def summary_items(self) -> list[str]:
        items: list[str] = []
        for section in self.sections:
            if section.kind == "fields":
                items += [change.summary for change in section.fields]
            elif section.kind == "table" and section.table is not None:
                items += section.table.summaries()
            else:
                for message in section.messages:
                    name = message_name(message.number)
                    if message.status != "changed":
                        items.append(status_phrase(message.status, name))
                    else:
                        items.append(status_phrase("changed", f"{name} {join_words(message.changed_parts)}"))
        return items

    def _whole_entry_summary(self) -> str:
        """'New: name, description, 2 arguments, 1 message' when everything was added (or removed)."""
        statuses = {s for s in self._statuses()}
        if statuses not in ({"added"}, {"removed"}):
            return ""
        parts: list[str] = []
        for section in self.sections:
            if section.kind == "fields":
                parts += [in_sentence(change.label) for change in section.fields]
            elif section.table is not None:
                count = len(section.table.rows)
                if section.table.key == "variables":
                    parts.append(ngettext("%(count)s variable", "%(count)s variables", count) % {"count": count})
                else:
                    parts.append(ngettext("%(count)s argument", "%(count)s arguments", count) % {"count": count})
            else:
                count = len(section.messages)
                parts.append(ngettext("%(count)s message", "%(count)s messages", count) % {"count": count})
        text = gettext("New: %(parts)s") if statuses == {"added"} else gettext("Removed: %(parts)s")
        return text % {"parts": join_words(parts)}

    def _statuses(self) -> list[str]:
        statuses = []
        for section in self.sections:
            statuses += [change.status for change in section.fields]
            statuses += [row.status for row in section.table.rows] if section.table else []
            statuses += [message.status for message in section.messages]
        return statuses

    def summary(self, limit: int = 4) -> str:
        """'Message 2 text changed; Title changed', at most `limit` items then 'and N more'."""
        whole = self._whole_entry_summary()
        if whole:
            return whole
        items = self.summary_items()
        if not items:
            return gettext("No changes")
        shown = items[:limit]
        if len(items) > limit:
            shown.append(gettext("and %(count)s more") % {"count": len(items) - limit})
        text = "; ".join(shown)
        return text[:1].upper() + text[1:]


# "Title changed", "Argument topic added", "Message 2 text changed": whole phrases, so each
# language puts the words in its own order.
_STATUS_PHRASES = {"changed": gettext_noop("%(what)s changed"), "added": gettext_noop("%(what)s added"),
                   "removed": gettext_noop("%(what)s removed")}


def status_phrase(status: str, what: str) -> str:
    return gettext(_STATUS_PHRASES[status]) % {"what": what}


def in_sentence(label: str) -> str:
    """A field label inside a sentence: lower-cased, except in German, where nouns keep their capital."""
    return label if (get_language() or "").startswith("de") else label.lower()


def message_name(number: int) -> str:
    return gettext("Message %(number)s") % {"number": number}


def join_words(words: list[str]) -> str:
    """['a', 'b', 'c'] -> 'a, b and c'."""
    if not words:
        return ""
    if len(words) == 1:
        return words[0]
    return gettext("%(list)s and %(last)s") % {"list": ", ".join(words[:-1]), "last": words[-1]}

# ----------------------------------------------------------------------------------------- schema
# Which fields there are, their labels and how they compare come from registry/authoring/schema.py;
# this module only turns them into words.

_LONG_TEXT_CHARS = 80
_CONTEXT_LINES = 2
_MAX_WORD_TOKENS = 2000  # above this a changed block is shown as deleted + inserted, not word by word
_HASH = re.compile(r"[0-9a-f]{64}")


def humanise(key: str) -> str:
    """'mimeType' / 'link_name' / 'a.b' -> 'Mime type' / 'Link name' / 'A › b', for keys with no form label."""
    words = re.sub(r"(?<=[a-z0-9])([A-Z])", r" \1", key).replace("_", " ").replace(".", " › ")
    words = words.strip().lower()
    return words[:1].upper() + words[1:] if words else key


def field_label(kind: str, key: str) -> str:
    """The form label of a snapshot key of `kind` (e.g. 'mimeType' -> 'Mime type'), else a humanised key."""
    found = schema_of(kind).field_for(key) if kind in SCHEMAS else None
    return label_text(found) if found is not None else humanise(key)


# ------------------------------------------------------------------------------------ documents


@dataclass(frozen=True)
class Document:
    """One side of a document field: a content-store reference, or the inline text/bytes of older records."""

    parts: tuple[tuple[str, Any], ...]  # the reference as the snapshot holds it, for comparing
    sha256: str = ""  # may be the short form an audit record keeps
    size: int | None = None
    binary: bool = False
    text: str | None = None  # the text itself: inline, or loaded from the store
    mime_type: str = ""
    note: str = ""  # why the text is not shown

    def summary(self) -> str:
        """'image/png · 2,150 bytes · sha256 1a2b3c4d5e6f', or the text's size and hash."""
        bits = [self.mime_type] if self.binary and self.mime_type else []
        if self.size is not None:
            bits.append(gettext("%(size)s bytes") % {"size": f"{self.size:,}"})
        if self.sha256:
            bits.append(f"sha256 {self.sha256[:12]}")
        text = " · ".join(bits)
        return f"{text} ({self.note})" if self.note else text


def _document(field: Field, mapping: Any) -> Document | None:
    """The document `field` stands for inside `mapping` (None when the mapping has none of its parts)."""
    if not isinstance(mapping, dict):
        return None
    parts = {key: mapping[key] for key in field.parts if mapping.get(key) not in (None, "")}
    if not parts:
        return None
    sha, size = parts.get("sha256", ""), parts.get("size")
    inline = parts.get("blob", parts.get("data"))
    if isinstance(inline, dict):  # a {sha256, size} reference under `blob` (an early snapshot shape)
        sha, size, inline = inline.get("sha256", sha), inline.get("size", size), None
    recorded = re.fullmatch(r"<(\d+) bytes, sha256 ([0-9a-f]+)>", inline) if isinstance(inline, str) else None
    if recorded:  # bytes already summarised when an audit entry was written
        size, sha, inline = int(recorded.group(1)), recorded.group(2), None
    elif isinstance(inline, str):
        try:
            raw = base64.b64decode(inline, validate=True)
        except (binascii.Error, ValueError):
            raw = inline.encode()
        size, sha = len(raw), hashlib.sha256(raw).hexdigest()
    sha = str(sha).removeprefix("sha256 ")
    # Image and audio blocks hold bytes only; a resource says how its bytes are served. Audit
    # records keep bytes as a "<N bytes, sha256 ...>" summary (registry/authoring/snapshots.py), so a
    # recorded reference without its encoding is a long text.
    binary = ("encoding" not in field.parts or parts.get("encoding") == "base64"
              or "blob" in parts or "data" in parts)
    text = parts.get("text")
    return Document(tuple(sorted(parts.items(), key=lambda kv: kv[0])), sha, size if isinstance(size, int) else None,
                    binary, text if isinstance(text, str) else None, str(mapping.get("mimeType") or ""))


def _with_text(doc: Document, load: Loader) -> Document:
    """The document with its text loaded from the store, when it is text, complete and not too long."""
    if doc.binary or doc.text is not None:
        return doc
    too_long = replace(doc, note=gettext("too long to compare here: over %(limit)s KiB")
                       % {"limit": DIFF_DOCUMENT_LIMIT // 1024})
    if not _HASH.fullmatch(doc.sha256):  # an audit entry written before whole hashes were kept
        return replace(doc, note=gettext("the audit log keeps only the size and hash of texts over %(limit)s KiB")
                       % {"limit": DIFF_TEXT_LIMIT // 1024})
    if doc.size is not None and doc.size > DIFF_DOCUMENT_LIMIT:
        return too_long
    try:
        return replace(doc, text=load(doc.sha256, "text"))
    except TooLargeToDiff:
        return too_long
    except (ContentMissing, UnicodeDecodeError, ValueError):
        return replace(doc, note=gettext("not in the content store"))


# ------------------------------------------------------------------------------------ value words


def _choice_text(field: Field | None, leaf: str, value: Any) -> str | None:
    name = field.choices if field is not None and field.choices else {"role": "role", "type": "content_type",
                                                                        "audience": "audience"}.get(leaf, "")
    if not name:
        return None
    labels = choice_labels(name)
    if isinstance(value, list):  # the audience annotation is a list
        joined = ",".join(str(v) for v in value)
        return labels.get(joined, ", ".join(str(v) for v in value))
    return labels.get(str(value), str(value))


def display(value: Any, *, key: str = "", field: Field | None = None) -> Value:
    """How one snapshot value reads: not set, Yes/No, a list joined, a file summarised, a number.

    `field` (the schema's) decides; keys the schema does not know are read by their shape.
    """
    leaf = key.rsplit(".", 1)[-1]
    if value is None or value == "" or value == [] or value == {}:
        return NOT_SET
    if isinstance(value, Document):
        if value.text is not None:
            return Value(value.text, multiline="\n" in value.text)
        return Value(value.summary())
    shows = field.shows if field is not None else ""
    if shows == CHOICE or (not shows and leaf in ("role", "type", "audience")):
        chosen = _choice_text(field, leaf, value)
        if chosen is not None:
            return Value(chosen)
    if isinstance(value, bool):
        return Value(gettext("Yes") if value else gettext("No"))
    if isinstance(value, (int, float)):
        return Value(f"{value:,}" if leaf == "size" and isinstance(value, int) else str(value))
    if isinstance(value, list):
        items = [display(item).text for item in value]
        if shows == LINES or (not shows and leaf == "suggestions"):
            return Value("\n".join(items), multiline=len(items) > 1)
        return Value(", ".join(items))
    if isinstance(value, dict):
        return Value("; ".join(f"{humanise(k)}: {display(v, key=k).text or gettext('not set')}" for k, v in value.items()))
    if isinstance(value, str) and _HASH.fullmatch(value) and leaf == "sha256":
        return Value(f"sha256 {value[:12]}")
    text = str(value)
    return Value(text, multiline="\n" in text)


def _status(before: Any, after: Any) -> str:
    if display(before).missing:
        return "added"
    if display(after).missing:
        return "removed"
    return "changed"


def _is_long(value: Any) -> bool:
    return isinstance(value, str) and ("\n" in value or len(value) > _LONG_TEXT_CHARS)


# -------------------------------------------------------------------------------------- word diff

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


def _merge(segments: Iterable[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for segment in segments:
        if not segment.text:
            continue
        if out and out[-1].op == segment.op:
            out[-1] = Segment(segment.op, out[-1].text + segment.text)
        else:
            out.append(segment)
    return out


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes, matching only what lies between the common head and tail.

    Most edits leave the start and end of a text alone; trimming them first keeps long texts
    fast, and difflib's junk heuristic keeps blank lines and spaces from making it quadratic.
    """
    head, limit = 0, min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    middle = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail]).get_opcodes()
    opcodes = [("equal", 0, head, 0, head)] if head else []
    opcodes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle
                if i1 != i2 or j1 != j2]
    if tail:
        opcodes.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    merged: list[tuple[str, int, int, int, int]] = []
    for op in opcodes:
        if merged and merged[-1][0] == op[0] == "equal":
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        else:
            merged.append(op)
    return merged


def _word_segments(old: str, new: str) -> list[Segment]:
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) > _MAX_WORD_TOKENS or len(b) > _MAX_WORD_TOKENS:
        return _merge([Segment("del", old), Segment("ins", new)])
    opcodes = _opcodes(a, b)
    # A lone space between two changes reads better inside both changes: "-the quick- +a slow+".
    groups: list[tuple[str, str, str]] = []  # (op, before text, after text)
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        old_part, new_part = "".join(a[i1:i2]), "".join(b[j1:j2])
        between = 0 < index < len(opcodes) - 1
        if tag == "equal" and between and not old_part.strip():
            groups.append(("glue", old_part, new_part))
        else:
            groups.append(("equal" if tag == "equal" else "change", old_part, new_part))
    segments: list[Segment] = []
    pending_del, pending_ins = "", ""
    for op, old_part, new_part in groups:
        if op == "equal" or (op == "glue" and not (pending_del or pending_ins)):
            segments += [Segment("del", pending_del), Segment("ins", pending_ins), Segment("same", old_part)]
            pending_del = pending_ins = ""
        else:
            pending_del += old_part
            pending_ins += new_part
    segments += [Segment("del", pending_del), Segment("ins", pending_ins)]
    return _merge(segments)


def word_diff(old: str | None, new: str | None, *, context_lines: int = _CONTEXT_LINES) -> list[Segment]:
    """Inline diff of two texts: lines are matched first, then changed lines word by word.

    Long unchanged stretches between changes are folded into a "gap" segment that says how many
    lines it hides, so a one-word change in a long document stays readable.
    """
    old, new = old or "", new or ""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    segments: list[Segment] = []
    opcodes = _opcodes(a, b)
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            lines = a[i1:i2]
            head = 0 if index == 0 else context_lines
            tail = 0 if index == len(opcodes) - 1 else context_lines
            if len(opcodes) > 1 and len(lines) > head + tail + 1:
                hidden = len(lines) - head - tail
                segments.append(Segment("same", "".join(lines[:head])))
                segments.append(Segment("gap", ngettext("… %(count)s unchanged line …", "… %(count)s unchanged lines …",
                                                        hidden) % {"count": hidden}))
                segments.append(Segment("same", "".join(lines[len(lines) - tail:])))
            else:
                segments.append(Segment("same", "".join(lines)))
        elif tag == "delete":
            segments.append(Segment("del", "".join(a[i1:i2])))
        elif tag == "insert":
            segments.append(Segment("ins", "".join(b[j1:j2])))
        else:
            segments += _word_segments("".join(a[i1:i2]), "".join(b[j1:j2]))
    return _merge(segments)


# -------------------------------------------------------------------------------------- structure

_NO_SCHEMA = Schema(kind="", fields=())  # audit entries of what is not an entry (MCP clients): all keys generic


def _get(mapping: Any, key: str) -> Any:
    node = mapping
    for step in key.split(".") if key else ():
        if not isinstance(node, dict):
            return None
        node = node.get(step)
    return node


def _value(field: Field, mapping: Any) -> Any:
    if field.shows == DOCUMENT:
        return _document(field, _get(mapping, field.key) if field.key else mapping)
    return _get(mapping, field.key)


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    """Nested dicts -> {'a.b': leaf}; lists stay whole (lists of rows are handled before this)."""
    if isinstance(value, dict) and value and not (path.rsplit(".", 1)[-1] in ("blob", "data") and "sha256" in value):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{path}.{key}" if path else str(key)))
        return out
    return {path: value}


def _change_key(field: Field) -> str:
    return field.key or "content"


def _document_change(field: Field, old: Document | None, new: Document | None,
                     load: Loader | None) -> FieldChange | None:
    if (old.parts if old else None) == (new.parts if new else None):
        return None
    if load is not None:  # only a changed document is read, and only on a page that shows it
        old, new = (_with_text(doc, load) if doc is not None else None for doc in (old, new))
    present = [doc for doc in (old, new) if doc is not None]
    label = label_text(field) if not any(doc.binary for doc in present) else binary_label(field)
    if all(doc.text is not None for doc in present):
        change = FieldChange(_change_key(field), label, _status(old, new), display(old), display(new))
        change.words = word_diff(old.text if old else None, new.text if new else None)
        return change
    # A text becoming a file (or one side not readable): both by size, type and hash
    shown = [Value(doc.summary()) if doc is not None else NOT_SET for doc in (old, new)]
    return FieldChange(_change_key(field), label, _status(old, new), *shown)


def _field_change(field: Field | None, key: str, old: Any, new: Any, *, label: str | None = None,
                  load: Loader | None = None) -> FieldChange | None:
    if field is not None and field.shows == DOCUMENT:
        return _document_change(field, old, new, load)
    if old == new or (display(old, key=key, field=field).missing and display(new, key=key, field=field).missing):
        return None
    label = label or (label_text(field) if field is not None else humanise(key))
    change = FieldChange(key, label, _status(old, new), display(old, key=key, field=field),
                         display(new, key=key, field=field))
    if (change.status == "changed" and (_is_long(old) or _is_long(new))
            and key.rsplit(".", 1)[-1] not in ("blob", "data")):
        change.words = word_diff(old if isinstance(old, str) else None, new if isinstance(new, str) else None)
    return change


def _rows(value: Any) -> dict[int, dict[str, Any]]:
    """A list of rows (snapshot) or {index: row} (rebuilt from an audit entry), 1-based."""
    if isinstance(value, dict):
        return {int(k): v for k, v in value.items() if isinstance(v, dict)}
    if isinstance(value, list):
        return {index + 1: row for index, row in enumerate(value) if isinstance(row, dict)}
    return {}


def _pair_by_name(before: dict[int, dict], after: dict[int, dict],
                  identity: str) -> list[tuple[dict | None, dict | None]]:
    """Arguments and variables have unique names: a row keeps its identity when others move."""
    named_before = {row.get(identity): row for row in before.values()}
    pairs: list[tuple[dict | None, dict | None]] = []
    seen = set()
    for row in after.values():
        pairs.append((named_before.get(row.get(identity)), row))
        seen.add(row.get(identity))
    pairs += [(row, None) for row in before.values() if row.get(identity) not in seen]
    return pairs


def _row_status(old: dict | None, new: dict | None, identity: str, partial: bool) -> str | None:
    """"added" / "removed" / None (present on both sides). Recorded changes keep changed keys only,
    so there a row is new when its identity key (every row has one) appears from nothing."""
    if partial:
        old_has, new_has = bool(old) and identity in old, bool(new) and identity in new
        if new_has and not old_has:
            return "added"
        if old_has and not new_has:
            return "removed"
        return None
    if not old:
        return "added"
    if not new:
        return "removed"
    return None


def _cell_value(column: Field, row: dict | None, known: bool) -> Any:
    if row is None:
        return None
    value = row.get(column.key)
    return column.default if value is None and known and column.default is not None else value


def _shown_columns(table: Table, pairs: list[tuple[dict | None, dict | None]]) -> list[Field]:
    """The table's columns, leaving out those no row uses on either side (the bounds of other types)."""
    def used(column: Field) -> bool:
        return any(row is not None and row.get(column.key) not in (None, "", [], column.default)
                   for pair in pairs for row in pair)
    return [c for c in table.columns if table.always is None or c.key in table.always or used(c)]


def _table(table: Table, old: Any, new: Any, partial: bool) -> TableChange | None:
    before, after = _rows(old), _rows(new)
    if partial:  # recorded changes are by position, and unchanged cells were not kept
        positions = sorted(set(before) | set(after))
        pairs = [(before.get(i), after.get(i)) for i in positions]
    else:
        pairs = _pair_by_name(before, after, table.identity)
        positions = list(range(1, len(pairs) + 1))
    columns = _shown_columns(table, pairs)
    rows: list[TableRow] = []
    any_change = False
    for position, (b_row, a_row) in zip(positions, pairs):
        status = _row_status(b_row, a_row, table.identity, partial) or "same"
        cells = []
        for column in columns:
            known = not partial or any(row is not None and column.key in row for row in (b_row, a_row))
            b_val, a_val = _cell_value(column, b_row, known), _cell_value(column, a_row, known)
            b_shown = display(b_val, key=column.key, field=column)
            a_shown = display(a_val, key=column.key, field=column)
            changed = status == "same" and b_val != a_val and not (b_shown.missing and a_shown.missing)
            cells.append(Cell(b_shown if known and b_row is not None else None,
                              a_shown if known and a_row is not None else None, changed))
        if status == "same" and any(cell.changed for cell in cells):
            status = "changed"
        any_change = any_change or status != "same"
        name = (a_row or b_row or {}).get(table.identity)
        renamed = partial and status == "changed" and cells[0].changed
        rows.append(TableRow(str(name) if name and not renamed else str(position), status, cells))
    if not any_change:
        return None
    return TableChange(table.key, gettext(table.heading), gettext(table.singular),
                       [label_text(column) for column in columns], rows)


def _message_key(message: dict[str, Any]) -> str:
    import json

    return json.dumps(message, sort_keys=True, default=str)


def _pair_messages(old: Any, new: Any, partial: bool) -> list[tuple[int | None, dict | None, int | None, dict | None]]:
    before, after = _rows(old), _rows(new)
    if partial:
        return [(i if i in before else None, before.get(i), i if i in after else None, after.get(i))
                for i in sorted(set(before) | set(after))]
    a_keys = [_message_key(before[i]) for i in sorted(before)]
    b_keys = [_message_key(after[i]) for i in sorted(after)]
    pairs: list[tuple[int | None, dict | None, int | None, dict | None]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a_keys, b_keys, autojunk=False).get_opcodes():
        if tag == "equal":
            continue
        olds, news = list(range(i1, i2)), list(range(j1, j2))
        for offset in range(max(len(olds), len(news))):
            i = olds[offset] + 1 if offset < len(olds) else None
            j = news[offset] + 1 if offset < len(news) else None
            pairs.append((i, before.get(i) if i else None, j, after.get(j) if j else None))
    return pairs


_BUBBLE = ("role", "content.type", "content.text")  # shown in the bubble itself, not as fields


def _message(spec: Messages, i: int | None, old: dict | None, j: int | None, new: dict | None,
             partial: bool = False, load: Loader | None = None) -> MessageChange | None:
    old, new = old or {}, new or {}
    status = _row_status(old, new, "role", partial) or "changed"
    if status == "changed" and old == new:
        return None
    fields: list[FieldChange] = []
    texts: tuple[str | None, str | None] = (_get(old, "content.text"), _get(new, "content.text"))
    for field in spec.fields:
        if field.key in _BUBBLE:
            continue
        old_value, new_value = _value(field, old), _value(field, new)
        if field.shows == DOCUMENT:
            if (old_value.parts if old_value else None) == (new_value.parts if new_value else None):
                continue
            if load is not None:
                old_value, new_value = (_with_text(d, load) if d is not None else None for d in (old_value, new_value))
            present = [d for d in (old_value, new_value) if d is not None]
            if field.binary_form and all(d.text is not None for d in present) and (
                    old_value is None or new_value is None or old_value.text != new_value.text):
                # an embedded text is the bubble's text, diffed word by word like a text message's
                texts = (old_value.text if old_value else None, new_value.text if new_value else None)
                continue
        change = _field_change(field, _change_key(field), old_value, new_value)
        if change is not None:
            change.words = None  # message fields are short; the text is in the bubble
            fields.append(change)
    if status == "changed" and _get(old, "content.type") != _get(new, "content.type"):
        kind_field = spec.field_for("content.type")
        change = _field_change(kind_field, "content.type", _get(old, "content.type"), _get(new, "content.type"))
        if change is not None:
            fields.insert(0, change)
    flat_old, flat_new = _flat(old), _flat(new)
    for key in sorted((set(flat_old) | set(flat_new))):
        if spec.field_for(key) is not None:
            continue
        change = _field_change(None, key, flat_old.get(key), flat_new.get(key),
                               label=humanise(key.removeprefix("content.")))
        if change is not None:
            change.words = None
            fields.append(change)
    text_old, text_new = texts
    if status == "added":
        words = _merge([Segment("ins", text_new or "")])
    elif status == "removed":
        words = _merge([Segment("del", text_old or "")])
    else:
        words = word_diff(text_old, text_new) if text_old != text_new else _merge([Segment("same", text_new or "")])
    role_old, role_new = old.get("role"), new.get("role")
    current = new if status != "removed" else old
    role_field, kind_field = spec.field_for("role"), spec.field_for("content.type")
    number = j if j is not None else i
    return MessageChange(
        number=number or 0, was=i if (i is not None and j is not None and i != j) else None, status=status,
        role_key=str(current.get("role") or ""), role=display(current.get("role"), key="role", field=role_field),
        role_before=(display(role_old, key="role", field=role_field)
                     if status == "changed" and role_old != role_new else None),
        kind=display(_get(current, "content.type"), key="type", field=kind_field), words=words, fields=fields,
        kind_value=str(_get(current, "content.type") or ""),
    )


def build(kind: str, before: dict[str, Any] | None, after: dict[str, Any] | None, *,
          before_name: str = "before", after_name: str = "after", partial: bool = False,
          load: Loader | None = None) -> EntryDiff:
    """The readable diff of two snapshots of an entry of `kind` ("prompt", "resource", "template").

    Every field of the kind's snapshot schema (registry/authoring/schema.py) is compared; keys the
    schema does not know follow under "Other fields". `load(sha256, "text")` reads a changed
    document's text (registry/authoring/snapshots.py `diff_loader`) up to DIFF_DOCUMENT_LIMIT; without it
    documents are shown by size and hash, as lists and summaries do.
    """
    schema = SCHEMAS.get(kind, _NO_SCHEMA)
    before, after = before or {}, after or {}
    sections: list[Section] = []
    main = [c for c in (_field_change(f, _change_key(f), _value(f, before), _value(f, after), load=load)
                        for f in schema.fields) if c is not None]
    if main:
        sections.append(Section("fields", fields=main))
    for table_spec in schema.tables:
        table = _table(table_spec, before.get(table_spec.key), after.get(table_spec.key), partial)
        if table is not None:
            sections.append(Section("table", title=table.label, table=table))
    if schema.messages is not None:
        spec = schema.messages
        messages = [m for m in (_message(spec, *pair, partial=partial, load=load) for pair in _pair_messages(
            before.get(spec.key), after.get(spec.key), partial)) if m is not None]
        if messages:
            sections.append(Section("messages", title=gettext("Messages"), messages=messages))
    flat_before = _flat({k: v for k, v in before.items() if k not in schema.row_keys})
    flat_after = _flat({k: v for k, v in after.items() if k not in schema.row_keys})
    unknown = [key for key in dict.fromkeys([*flat_before, *flat_after]) if schema.field_for(key) is None]
    others = [c for c in (_field_change(None, key, flat_before.get(key), flat_after.get(key), label=humanise(key))
                          for key in unknown) if c is not None]
    if others:
        sections.append(Section("fields", title=gettext("Other fields"), fields=others))
    return EntryDiff(before_name, after_name, sections, partial=partial)


# --------------------------------------------------------------------- recorded (audit) changes

_STEP = re.compile(r"([^.\[\]]+)(?:\[(\d+)\])?")


def _unflatten(changes: list[dict[str, Any]], side: str) -> dict[str, Any]:
    """{'messages[2].content.text': x} -> {'messages': {2: {'content': {'text': x}}}} for one side."""
    root: dict[Any, Any] = {}
    for change in changes:
        path, value = str(change.get("field", "")), change.get(side)
        if value is None or not path:
            continue
        steps: list[Any] = []
        for match in _STEP.finditer(path):
            steps.append(match.group(1))
            if match.group(2) is not None:
                steps.append(int(match.group(2)))
        node = root
        for step in steps[:-1]:
            if not isinstance(node.get(step), dict):
                node[step] = {}
            node = node[step]
        if not isinstance(node.get(steps[-1]), dict) or not isinstance(value, list):
            node[steps[-1]] = value
    return root


def from_changes(kind: str, changes: list[dict[str, Any]] | None, *, before_name: str = "before",
                 after_name: str = "after", load: Loader | None = None) -> EntryDiff:
    """The readable diff of an audit entry's recorded field changes ([{field, before, after}]).

    Texts up to DIFF_TEXT_LIMIT are in the record; `load` reads longer ones (by their recorded hash)."""
    changes = [c for c in (changes or []) if isinstance(c, dict)]
    return build(kind, _unflatten(changes, "before"), _unflatten(changes, "after"),
                 before_name=before_name, after_name=after_name, partial=True, load=load)


def change_summary(kind: str, changes: list[dict[str, Any]] | None) -> str:
    """The one-line summary of an audit entry's recorded changes ("" when it recorded none)."""
    return from_changes(kind, changes).summary() if changes else ""
