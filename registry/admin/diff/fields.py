"""One field of a snapshot compared: a FieldChange in words, or None when it did not change.

The path helpers (a dotted key into nested snapshot data, flattening what the schema does not
know) and the comparison of one value or document, shared by the entry's own fields, its
message contents and the keys shown under "Other fields".
"""

from __future__ import annotations

from typing import Any

from registry.admin.diff.changes import NOT_SET, FieldChange, Value
from registry.admin.diff.values import (
    Document,
    change_status,
    display,
    document_of,
    humanise,
    is_long,
    with_text,
)
from registry.admin.diff.words import word_diff
from registry.admin.schema_labels import binary_label, label_text
from registry.authoring.schema import DOCUMENT, Field
from registry.authoring.snapshots import Loader


def lookup(mapping: Any, key: str) -> Any:
    node = mapping
    for step in key.split(".") if key else ():
        if not isinstance(node, dict):
            return None
        node = node.get(step)
    return node


def value_of(field: Field, mapping: Any) -> Any:
    if field.shows == DOCUMENT:
        return document_of(field, lookup(mapping, field.key) if field.key else mapping)
    return lookup(mapping, field.key)


def flatten(value: Any, path: str = "") -> dict[str, Any]:
    """Nested dicts -> {'a.b': leaf}; lists stay whole (lists of rows are handled before this)."""
    if isinstance(value, dict) and value and not (path.rsplit(".", 1)[-1] in ("blob", "data") and "sha256" in value):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(flatten(item, f"{path}.{key}" if path else str(key)))
        return out
    return {path: value}


def change_key(field: Field) -> str:
    return field.key or "content"


def _document_change(field: Field, old: Document | None, new: Document | None,
                     load: Loader | None) -> FieldChange | None:
    if (old.parts if old else None) == (new.parts if new else None):
        return None
    if load is not None:  # only a changed document is read, and only on a page that shows it
        old, new = (with_text(doc, load) if doc is not None else None for doc in (old, new))
    present = [doc for doc in (old, new) if doc is not None]
    label = label_text(field) if not any(doc.binary for doc in present) else binary_label(field)
    if all(doc.text is not None for doc in present):
        change = FieldChange(change_key(field), label, change_status(old, new), display(old), display(new))
        change.words = word_diff(old.text if old else None, new.text if new else None)
        return change
    # A text becoming a file (or one side not readable): both by size, type and hash
    shown = [Value(doc.summary()) if doc is not None else NOT_SET for doc in (old, new)]
    return FieldChange(change_key(field), label, change_status(old, new), shown[0], shown[1])


def field_change(field: Field | None, key: str, old: Any, new: Any, *, label: str | None = None,
                  load: Loader | None = None) -> FieldChange | None:
    if field is not None and field.shows == DOCUMENT:
        return _document_change(field, old, new, load)
    if old == new or (display(old, key=key, field=field).missing and display(new, key=key, field=field).missing):
        return None
    label = label or (label_text(field) if field is not None else humanise(key))
    change = FieldChange(key, label, change_status(old, new), display(old, key=key, field=field),
                         display(new, key=key, field=field))
    if (change.status == "changed" and (is_long(old) or is_long(new))
            and key.rsplit(".", 1)[-1] not in ("blob", "data")):
        change.words = word_diff(old if isinstance(old, str) else None, new if isinstance(new, str) else None)
    return change
