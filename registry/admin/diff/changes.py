"""What a diff holds: plain dataclasses of strings the templates render, and their summaries.

The shapes every other module of the diff fills in (EntryDiff > Section > FieldChange /
TableChange / MessageChange, values as `Value`, word diffs as `Segment` runs) and the phrases of
the one-line summaries ("Title changed", "Message 2 text changed") kept with them, so a summary
reads the same wherever it is shown. No schema, no snapshots, no database.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils.translation import get_language, gettext, gettext_noop, ngettext


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
                names = [in_sentence(name) for name, cell in zip(self.columns, row.cells, strict=True) if cell.changed]
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
        statuses = set(self._statuses())
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
