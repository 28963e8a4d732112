"""Two snapshots (or an audit entry's recorded changes) -> what a person reads in a diff.

One module behind every diff the admin shows (compare page, publish / request / label / restore
confirmations, the review page, history and the audit log), so they all speak the same words:
fields in the order of the edit form and with its labels, "not set" instead of `null`,
Yes/No instead of True/False, arguments as a table, messages as chat bubbles with word-level
insertions and deletions, binary payloads as size + short hash, and keys this module does not
know (added to snapshots later) shown generically after the known ones.

It returns plain data (dataclasses of strings); templates render it, auto-escaped, so nothing
here builds HTML. No database access: the form labels are read from the form classes.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Iterable

from django.utils.translation import get_language, gettext, gettext_noop, ngettext

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

# Snapshot key -> (form class name in registry.forms, form field name), in the order of the admin form.
_ENTRY_FIELDS: dict[str, list[tuple[str, str, str]]] = {
    "prompt": [
        ("name", "PromptForm", "name"), ("title", "PromptForm", "title"),
        ("description", "PromptForm", "description"), ("tags", "PromptForm", "tags"),
    ],
    "resource": [
        ("uri", "ResourceForm", "uri"), ("name", "ResourceForm", "name"), ("title", "ResourceForm", "title"),
        ("description", "ResourceForm", "description"), ("tags", "ResourceForm", "tags"),
        ("mimeType", "ResourceForm", "mime_type"), ("text", "ResourceForm", "text"),
        ("blob", "ResourceForm", "upload"), ("size", "", gettext_noop("Size")),
        ("annotations.audience", "ResourceForm", "audience"), ("annotations.priority", "ResourceForm", "priority"),
    ],
    "template": [
        ("uriTemplate", "ResourceTemplateForm", "uri_template"), ("name", "ResourceTemplateForm", "name"),
        ("title", "ResourceTemplateForm", "title"), ("description", "ResourceTemplateForm", "description"),
        ("tags", "ResourceTemplateForm", "tags"), ("mimeType", "ResourceTemplateForm", "mime_type"),
        ("body", "ResourceTemplateForm", "body"),
        ("annotations.audience", "ResourceTemplateForm", "audience"),
        ("annotations.priority", "ResourceTemplateForm", "priority"),
    ],
}
# Lists of rows shown as tables: snapshot key -> (heading, singular, [(row key, form, form field)]).
_TABLES: dict[str, tuple[str, str, list[tuple[str, str, str]]]] = {
    "arguments": (gettext_noop("Arguments"), gettext_noop("Argument"), [
        ("name", "PromptArgumentForm", "name"), ("title", "PromptArgumentForm", "title"),
        ("description", "PromptArgumentForm", "description"), ("required", "PromptArgumentForm", "required"),
        ("default", "PromptArgumentForm", "default"), ("suggestions", "PromptArgumentForm", "suggestions"),
    ]),
    "variables": (gettext_noop("Variables"), gettext_noop("Variable"), [
        ("name", "TemplateVariableForm", "name"), ("description", "TemplateVariableForm", "description"),
        ("suggestions", "TemplateVariableForm", "suggestions"),
    ]),
}
_TABLES_OF_KIND = {"prompt": ["arguments"], "template": ["variables"], "resource": []}
# Message keys (content.* flattened) -> form field of the message inline.
_MESSAGE_FIELDS: list[tuple[str, str]] = [
    ("content.data", "upload"), ("content.mimeType", "mime_type"), ("content.uri", "uri"),
    ("content.name", "link_name"), ("content.title", gettext_noop("Title")),
    ("content.description", gettext_noop("Description")),
    ("content.resource.uri", "uri"), ("content.resource.mimeType", "mime_type"),
    ("content.resource.blob", "upload"),
]
_MESSAGE_TEXT_KEYS = ("content.text", "content.resource.text")
_BINARY_KEYS = {"blob", "data"}
_LONG_TEXT_CHARS = 80
_CONTEXT_LINES = 2
_MAX_WORD_TOKENS = 2000  # above this a changed block is shown as deleted + inserted, not word by word


def _form_label(form_name: str, field_name: str) -> str:
    """The label editors see on the form, in the active language."""
    return _form_label_in(form_name, field_name, get_language())


@cache
def _form_label_in(form_name: str, field_name: str, language: str | None) -> str:
    if not form_name:
        return gettext(field_name)
    from registry import forms  # the labels editors see; imported late so this module stays importable alone

    form_field = getattr(forms, form_name).base_fields.get(field_name)
    return str(form_field.label) if form_field is not None and form_field.label else humanise(field_name)


def _choice_labels() -> dict[str, dict[str, str]]:
    return _choice_labels_in(get_language())


@cache
def _choice_labels_in(language: str | None) -> dict[str, dict[str, str]]:
    from registry.models.prompts import ContentKind, MessageRole
    from registry.models.resources import Audience

    return {
        "role": {value: str(label) for value, label in MessageRole.choices},
        "type": {value: str(label) for value, label in ContentKind.choices},
        "audience": {value: str(label) for value, label in Audience.choices if value},
    }


def humanise(key: str) -> str:
    """'mimeType' / 'link_name' / 'a.b' -> 'Mime type' / 'Link name' / 'A › b', for keys with no form label."""
    words = re.sub(r"(?<=[a-z0-9])([A-Z])", r" \1", key).replace("_", " ").replace(".", " › ")
    words = words.strip().lower()
    return words[:1].upper() + words[1:] if words else key


def field_label(kind: str, key: str) -> str:
    """The form label of a snapshot key of `kind` (e.g. 'mimeType' -> 'Mime type'), else a humanised key."""
    for snap_key, form_name, form_field in _ENTRY_FIELDS.get(kind, []):
        if snap_key == key:
            return _form_label(form_name, form_field)
    return humanise(key)


# ------------------------------------------------------------------------------------ value words


def _binary_summary(value: Any) -> str | None:
    """'2,150 bytes · sha256 1a2b3c4d5e6f' for base64 text, a {sha256, size} reference or an audit summary."""
    if isinstance(value, dict) and "sha256" in value:
        size = value.get("size")
        size_text = gettext("%(size)s bytes · ") % {"size": f"{size:,}"} if isinstance(size, int) else ""
        return f"{size_text}sha256 {str(value['sha256'])[:12]}"
    if isinstance(value, str):
        recorded = re.fullmatch(r"<(\d+) bytes, sha256 ([0-9a-f]+)>", value)
        if recorded:  # already summarised when the audit entry was written
            return gettext("%(size)s bytes · ") % {"size": f"{int(recorded.group(1)):,}"} + f"sha256 {recorded.group(2)[:12]}"
        try:
            raw = base64.b64decode(value, validate=True)
        except (binascii.Error, ValueError):
            return None
        return gettext("%(size)s bytes · ") % {"size": f"{len(raw):,}"} + f"sha256 {hashlib.sha256(raw).hexdigest()[:12]}"
    return None


def display(value: Any, *, key: str = "") -> Value:
    """How one snapshot value reads: not set, Yes/No, a list joined, a file summarised, a number."""
    leaf = key.rsplit(".", 1)[-1]
    if value is None or value == "" or value == [] or value == {}:
        return NOT_SET
    if leaf in _BINARY_KEYS:
        summary = _binary_summary(value)
        if summary is not None:
            return Value(summary)
    if isinstance(value, bool):
        return Value(gettext("Yes") if value else gettext("No"))
    if leaf == "audience" and isinstance(value, list):
        joined = ",".join(str(v) for v in value)
        return Value(_choice_labels()["audience"].get(joined, ", ".join(str(v) for v in value)))
    if leaf in ("role", "type") and isinstance(value, str):
        return Value(_choice_labels()[leaf].get(value, value))
    if isinstance(value, (int, float)):
        return Value(f"{value:,}" if leaf == "size" and isinstance(value, int) else str(value))
    if isinstance(value, list):
        items = [display(item).text for item in value]
        if leaf == "suggestions":
            return Value("\n".join(items), multiline=len(items) > 1)
        return Value(", ".join(items))
    if isinstance(value, dict):
        return Value("; ".join(f"{humanise(k)}: {display(v, key=k).text or gettext('not set')}" for k, v in value.items()))
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


def _flat(value: Any, path: str = "") -> dict[str, Any]:
    """Nested dicts -> {'a.b': leaf}; lists stay whole (lists of rows are handled before this)."""
    if isinstance(value, dict) and value and not (path.rsplit(".", 1)[-1] in _BINARY_KEYS and "sha256" in value):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{path}.{key}" if path else str(key)))
        return out
    return {path: value}


def _field_change(kind: str, key: str, old: Any, new: Any, label: str | None = None) -> FieldChange | None:
    if old == new or (display(old, key=key).missing and display(new, key=key).missing):
        return None
    label = label or field_label(kind, key)
    change = FieldChange(key, label, _status(old, new), display(old, key=key), display(new, key=key))
    if change.status == "changed" and (_is_long(old) or _is_long(new)) and key.rsplit(".", 1)[-1] not in _BINARY_KEYS:
        change.words = word_diff(old if isinstance(old, str) else None, new if isinstance(new, str) else None)
    return change


def _rows(value: Any) -> dict[int, dict[str, Any]]:
    """A list of rows (snapshot) or {index: row} (rebuilt from an audit entry), 1-based."""
    if isinstance(value, dict):
        return {int(k): v for k, v in value.items() if isinstance(v, dict)}
    if isinstance(value, list):
        return {index + 1: row for index, row in enumerate(value) if isinstance(row, dict)}
    return {}


def _pair_by_name(before: dict[int, dict], after: dict[int, dict]) -> list[tuple[dict | None, dict | None]]:
    """Arguments and variables have unique names: a row keeps its identity when others move."""
    named_before = {row.get("name"): row for row in before.values()}
    pairs: list[tuple[dict | None, dict | None]] = []
    seen = set()
    for row in after.values():
        pairs.append((named_before.get(row.get("name")), row))
        seen.add(row.get("name"))
    pairs += [(row, None) for row in before.values() if row.get("name") not in seen]
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


def _table(key: str, old: Any, new: Any, partial: bool) -> TableChange | None:
    heading, singular, columns = _TABLES[key]
    before, after = _rows(old), _rows(new)
    if partial:  # recorded changes are by position, and unchanged cells were not kept
        pairs = [(before.get(i), after.get(i)) for i in sorted(set(before) | set(after))]
    else:
        pairs = _pair_by_name(before, after)
    rows: list[TableRow] = []
    any_change = False
    for position, (b_row, a_row) in enumerate(pairs, start=1):
        status = _row_status(b_row, a_row, "name", partial) or "same"
        cells = []
        for col_key, _form, _field in columns:
            b_val = None if b_row is None else b_row.get(col_key)
            a_val = None if a_row is None else a_row.get(col_key)
            known = not partial or (b_row is not None and col_key in b_row) or (a_row is not None and col_key in a_row)
            changed = status == "same" and b_val != a_val and not (
                display(b_val, key=col_key).missing and display(a_val, key=col_key).missing)
            cells.append(Cell(display(b_val, key=col_key) if known and b_row is not None else None,
                              display(a_val, key=col_key) if known and a_row is not None else None, changed))
        if status == "same" and any(cell.changed for cell in cells):
            status = "changed"
        any_change = any_change or status != "same"
        name = (a_row or b_row or {}).get("name")
        renamed = partial and status == "changed" and cells[0].changed
        rows.append(TableRow(str(name) if name and not renamed else str(position), status, cells))
    if not any_change:
        return None
    return TableChange(key, gettext(heading), gettext(singular), [_form_label(f, n) for _k, f, n in columns], rows)


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


def _message_text(flat: dict[str, Any]) -> str | None:
    for key in _MESSAGE_TEXT_KEYS:
        if isinstance(flat.get(key), str):
            return flat[key]
    return None


def _message(i: int | None, old: dict | None, j: int | None, new: dict | None,
             partial: bool = False) -> MessageChange | None:
    flat_old, flat_new = _flat(old or {}), _flat(new or {})
    status = _row_status(old, new, "role", partial) or "changed"
    if status == "changed" and flat_old == flat_new:
        return None
    text_old, text_new = _message_text(flat_old), _message_text(flat_new)
    if status == "added":
        words = _merge([Segment("ins", text_new or "")])
    elif status == "removed":
        words = _merge([Segment("del", text_old or "")])
    else:
        words = word_diff(text_old, text_new) if text_old != text_new else _merge([Segment("same", text_new or "")])
    role_old, role_new = flat_old.get("role"), flat_new.get("role")
    current = flat_new if status != "removed" else flat_old
    fields: list[FieldChange] = []
    known = [key for key, _ in _MESSAGE_FIELDS] + list(_MESSAGE_TEXT_KEYS) + ["role", "content.type"]
    for key, form_field in _MESSAGE_FIELDS:
        label = _form_label("PromptMessageForm", form_field) if form_field.islower() else gettext(form_field)
        change = _field_change("message", key, flat_old.get(key), flat_new.get(key), label=label)
        if change is not None:
            change.words = None  # message fields are short; the text is in the bubble
            fields.append(change)
    if flat_old.get("content.type") != flat_new.get("content.type") and status == "changed":
        change = _field_change("message", "content.type", flat_old.get("content.type"),
                               flat_new.get("content.type"), label=_form_label("PromptMessageForm", "kind"))
        if change is not None:
            fields.insert(0, change)
    for key in sorted((set(flat_old) | set(flat_new)) - set(known)):
        change = _field_change("message", key, flat_old.get(key), flat_new.get(key),
                               label=humanise(key.removeprefix("content.")))
        if change is not None:
            change.words = None
            fields.append(change)
    number = j if j is not None else i
    return MessageChange(
        number=number or 0, was=i if (i is not None and j is not None and i != j) else None, status=status,
        role_key=str(current.get("role") or ""), role=display(current.get("role"), key="role"),
        role_before=display(role_old, key="role") if status == "changed" and role_old != role_new else None,
        kind=display(current.get("content.type"), key="type"), words=words, fields=fields,
        kind_value=str(current.get("content.type") or ""),
    )


def build(kind: str, before: dict[str, Any] | None, after: dict[str, Any] | None, *,
          before_name: str = "before", after_name: str = "after", partial: bool = False) -> EntryDiff:
    """The readable diff of two snapshots of an entry of `kind` ("prompt", "resource", "template")."""
    before, after = before or {}, after or {}
    tables = _TABLES_OF_KIND.get(kind, [])
    list_keys = set(tables) | ({"messages"} if kind == "prompt" else set())
    flat_before = _flat({k: v for k, v in before.items() if k not in list_keys})
    flat_after = _flat({k: v for k, v in after.items() if k not in list_keys})
    sections: list[Section] = []

    known_fields = [key for key, _form, _field in _ENTRY_FIELDS.get(kind, [])]
    main = [c for c in (_field_change(kind, key, flat_before.get(key), flat_after.get(key)) for key in known_fields)
            if c is not None]
    if main:
        sections.append(Section("fields", fields=main))
    for key in tables:
        table = _table(key, before.get(key), after.get(key), partial)
        if table is not None:
            sections.append(Section("table", title=table.label, table=table))
    if "messages" in list_keys:
        messages = [m for m in (_message(*pair, partial=partial) for pair in _pair_messages(
            before.get("messages"), after.get("messages"), partial)) if m is not None]
        if messages:
            sections.append(Section("messages", title=gettext("Messages"), messages=messages))
    unknown = [key for key in dict.fromkeys([*flat_before, *flat_after]) if key not in known_fields]
    others = [c for c in (_field_change(kind, key, flat_before.get(key), flat_after.get(key), label=humanise(key))
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
                 after_name: str = "after") -> EntryDiff:
    """The readable diff of an audit entry's recorded field changes ([{field, before, after}])."""
    changes = [c for c in (changes or []) if isinstance(c, dict)]
    return build(kind, _unflatten(changes, "before"), _unflatten(changes, "after"),
                 before_name=before_name, after_name=after_name, partial=True)


def change_summary(kind: str, changes: list[dict[str, Any]] | None) -> str:
    """The one-line summary of an audit entry's recorded changes ("" when it recorded none)."""
    return from_changes(kind, changes).summary() if changes else ""
