"""The audit log as a CSV or JSON download: one format for the admin's export and the REST API's.

Auditors compare files exported from either place, so the columns, the ISO timestamps and the
formula defusing live here once; the callers only choose the entries (filters, permissions).
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from typing import Any

from django.http import HttpResponse, JsonResponse

from registry.models import AuditEntry

EXPORT_FORMATS = ("csv", "json")
EXPORT_COLUMNS = [
    "id", "created_at", "actor_name", "action", "entry_kind", "entry_key", "entry_id",
    "label", "from_version", "to_version", "note", "changes",
]


def csv_cell(value: Any) -> Any:
    """Keep spreadsheet programs from running a note such as '=HYPERLINK(...)' as a formula (OWASP)."""
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return value


def export_row(entry: AuditEntry) -> dict[str, Any]:
    """One audit entry as plain data in EXPORT_COLUMNS order (created_at as ISO 8601)."""
    row = {col: getattr(entry, col) for col in EXPORT_COLUMNS}
    row["created_at"] = entry.created_at.isoformat()
    return row


def export_response(entries: Iterable[AuditEntry], fmt: str) -> HttpResponse:
    """`entries` as an attachment: CSV (changes as JSON text, formulas defused) or JSON {count, entries}."""
    rows = [export_row(entry) for entry in entries]
    if fmt == "json":
        response: HttpResponse = JsonResponse({"count": len(rows), "entries": rows},
                                              json_dumps_params={"indent": 2})
    else:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        writer = csv.DictWriter(response, fieldnames=EXPORT_COLUMNS)
        writer.writeheader()
        for row in rows:
            row = {**row, "changes": json.dumps(row["changes"], ensure_ascii=False)}
            writer.writerow({key: csv_cell(value) for key, value in row.items()})
    response["Content-Disposition"] = f'attachment; filename="audit-log.{fmt}"'
    return response
