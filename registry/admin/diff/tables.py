"""Arguments of a prompt or variables of a template compared: one row each, changed cells marked.

Rows keep their identity by name when others move (or by position, for an audit entry's
recorded changes); columns no row uses on either side are left out.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext

from registry.admin.diff.changes import Cell, TableChange, TableRow
from registry.admin.diff.values import display
from registry.admin.schema_labels import label_text
from registry.authoring.schema import Field, Table


def rows_of(value: Any) -> dict[int, dict[str, Any]]:
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


def row_status(old: dict | None, new: dict | None, identity: str, partial: bool) -> str | None:
    """"added" / "removed" / None (present on both sides). Recorded changes keep changed keys only,
    so there a row is new when its identity key (every row has one) appears from nothing."""
    if partial:
        old_has, new_has = old is not None and identity in old, new is not None and identity in new
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


def table_change(table: Table, old: Any, new: Any, partial: bool) -> TableChange | None:
    before, after = rows_of(old), rows_of(new)
    if partial:  # recorded changes are by position, and unchanged cells were not kept
        positions = sorted(set(before) | set(after))
        pairs = [(before.get(i), after.get(i)) for i in positions]
    else:
        pairs = _pair_by_name(before, after, table.identity)
        positions = list(range(1, len(pairs) + 1))
    columns = _shown_columns(table, pairs)
    rows: list[TableRow] = []
    any_change = False
    for position, (b_row, a_row) in zip(positions, pairs, strict=True):
        status = row_status(b_row, a_row, table.identity, partial) or "same"
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
