"""A prompt's messages compared as chat bubbles: paired in order, the text word-diffed.

Messages have no name, so they are paired by a sequence match of their whole content; the
bubble shows role and text, and any other content field that changed (file, URI, MIME type)
is listed under it.
"""

from __future__ import annotations

import difflib
from typing import Any

from registry.admin.diff.changes import FieldChange, MessageChange, Segment
from registry.admin.diff.fields import change_key, field_change, flatten, lookup, value_of
from registry.admin.diff.tables import row_status, rows_of
from registry.admin.diff.values import display, humanise, with_text
from registry.admin.diff.words import merge, word_diff
from registry.authoring.schema import DOCUMENT, Messages
from registry.authoring.snapshots import Loader


def _message_key(message: dict[str, Any]) -> str:
    import json

    return json.dumps(message, sort_keys=True, default=str)


def pair_messages(old: Any, new: Any, partial: bool) -> list[tuple[int | None, dict | None, int | None, dict | None]]:
    before, after = rows_of(old), rows_of(new)
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


def message_change(spec: Messages, i: int | None, old: dict | None, j: int | None, new: dict | None,
             partial: bool = False, load: Loader | None = None) -> MessageChange | None:
    old, new = old or {}, new or {}
    status = row_status(old, new, "role", partial) or "changed"
    if status == "changed" and old == new:
        return None
    fields: list[FieldChange] = []
    texts: tuple[str | None, str | None] = (lookup(old, "content.text"), lookup(new, "content.text"))
    for field in spec.fields:
        if field.key in _BUBBLE:
            continue
        old_value, new_value = value_of(field, old), value_of(field, new)
        if field.shows == DOCUMENT:
            if (old_value.parts if old_value else None) == (new_value.parts if new_value else None):
                continue
            if load is not None:
                old_value, new_value = (with_text(d, load) if d is not None else None for d in (old_value, new_value))
            present = [d for d in (old_value, new_value) if d is not None]
            if field.binary_form and all(d.text is not None for d in present) and (
                    old_value is None or new_value is None or old_value.text != new_value.text):
                # an embedded text is the bubble's text, diffed word by word like a text message's
                texts = (old_value.text if old_value else None, new_value.text if new_value else None)
                continue
        change = field_change(field, change_key(field), old_value, new_value)
        if change is not None:
            change.words = None  # message fields are short; the text is in the bubble
            fields.append(change)
    if status == "changed" and lookup(old, "content.type") != lookup(new, "content.type"):
        kind_field = spec.field_for("content.type")
        change = field_change(kind_field, "content.type", lookup(old, "content.type"),
                              lookup(new, "content.type"))
        if change is not None:
            fields.insert(0, change)
    flat_old, flat_new = flatten(old), flatten(new)
    for key in sorted(set(flat_old) | set(flat_new)):
        if spec.field_for(key) is not None:
            continue
        change = field_change(None, key, flat_old.get(key), flat_new.get(key),
                               label=humanise(key.removeprefix("content.")))
        if change is not None:
            change.words = None
            fields.append(change)
    text_old, text_new = texts
    if status == "added":
        words = merge([Segment("ins", text_new or "")])
    elif status == "removed":
        words = merge([Segment("del", text_old or "")])
    else:
        words = (word_diff(text_old, text_new) if text_old != text_new
                 else merge([Segment("same", text_new or "")]))
    role_old, role_new = old.get("role"), new.get("role")
    current = new if status != "removed" else old
    role_field, kind_field = spec.field_for("role"), spec.field_for("content.type")
    number = j if j is not None else i
    return MessageChange(
        number=number or 0, was=i if (i is not None and j is not None and i != j) else None, status=status,
        role_key=str(current.get("role") or ""), role=display(current.get("role"), key="role", field=role_field),
        role_before=(display(role_old, key="role", field=role_field)
                     if status == "changed" and role_old != role_new else None),
        kind=display(lookup(current, "content.type"), key="type", field=kind_field), words=words,
        fields=fields,
        kind_value=str(lookup(current, "content.type") or ""),
    )
