"""`build`: two snapshots of an entry -> the EntryDiff every diff page shows.

The one entry point of the diff for snapshots: the kind's schema says which fields, tables and
messages there are; each part is compared by its own module, and keys the schema does not know
follow under "Other fields".
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from registry.admin.diff.changes import EntryDiff, Section
from registry.admin.diff.fields import change_key, field_change, flatten, value_of
from registry.admin.diff.messages import message_change, pair_messages
from registry.admin.diff.tables import table_change
from registry.admin.diff.values import humanise
from registry.authoring.schema import SCHEMAS, Schema
from registry.authoring.snapshots import Loader

_NO_SCHEMA = Schema(kind="", fields=())  # audit entries of what is not an entry (MCP clients): all keys generic


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
    main = [c for c in (field_change(f, change_key(f), value_of(f, before), value_of(f, after), load=load)
                        for f in schema.fields) if c is not None]
    if main:
        sections.append(Section("fields", fields=main))
    for table_spec in schema.tables:
        table = table_change(table_spec, before.get(table_spec.key), after.get(table_spec.key), partial)
        if table is not None:
            sections.append(Section("table", title=table.label, table=table))
    if schema.messages is not None:
        spec = schema.messages
        messages = [m for m in (message_change(spec, *pair, partial=partial, load=load)
                                for pair in pair_messages(before.get(spec.key), after.get(spec.key), partial))
                    if m is not None]
        if messages:
            sections.append(Section("messages", title=gettext("Messages"), messages=messages))
    flat_before = flatten({k: v for k, v in before.items() if k not in schema.row_keys})
    flat_after = flatten({k: v for k, v in after.items() if k not in schema.row_keys})
    unknown = [key for key in dict.fromkeys([*flat_before, *flat_after]) if schema.field_for(key) is None]
    others = [c for c in (field_change(None, key, flat_before.get(key), flat_after.get(key), label=humanise(key))
                          for key in unknown) if c is not None]
    if others:
        sections.append(Section("fields", title=gettext("Other fields"), fields=others))
    return EntryDiff(before_name, after_name, sections, partial=partial)
