"""Refused changes are audited: a save, move, delete, publish, decision or import that a
governance rule (team ownership, registry.roles) refused leaves one audit row, action `refused`.

An auditor asks "who tried to change what, and was stopped?" as often as "who changed what?".
The row names the actor, the entry, the owned folder, what was attempted and the reason (the
refusal's own words, as the user read them). It must outlive the refused change: the change's
transaction rolls back, so the row is written after that block has ended: by
`service_transaction` as the refusal leaves the service, and again at each path's boundary (the
API's error handler, the admin's form and actions, the importer once its transaction has rolled
back), which writes it only if an outer block rolled the first row back with the rest. So each
refusal leaves exactly one row, however many of those places see it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.utils.translation import gettext_lazy as _

from registry.audit import User, write_audit
from registry.errors import FolderOwnershipDenied
from registry.models import AuditAction, AuditEntry

# What was refused, as the audit row's `attempted` change says it (and the admin reads it).
ATTEMPTS: dict[str, Any] = {
    "create": _("create an entry"), "edit": _("change the draft"), "move": _("move it to another folder"),
    "delete": _("delete it"), "restore": _("restore the draft from a version"), "import": _("import it"),
    "request_review": _("request a review"), "decide": _("publish or decide a review"),
}


def attach(refusal: FolderOwnershipDenied, *, user: User, entry: Any, attempted: str,
           team: str) -> FolderOwnershipDenied:
    """Give `refusal` what its audit row names (registry.roles.folder_refusal calls this)."""
    refusal.audit = {"user": user, "entry": entry, "attempted": attempted, "team": team, "row": None}
    return refusal


def unsaved(kind: str, data: Any) -> Any:
    """What a refusal names for an entry not yet created: its kind and the key `data` gives it."""
    key = next((str(data[f]) for f in ("name", "uri", "uri_template") if data.get(f)), "")
    return SimpleNamespace(kind=kind, key=key, pk=None)


def _subject(entry: Any, folder: str) -> Any:
    """What write_audit reads of an entry: its kind, key and pk (None for a refused creation),
    else the folder (a refusal about no one entry)."""
    if entry is not None and entry.key:
        return SimpleNamespace(kind=entry.kind, key=entry.key, pk=entry.pk)
    return SimpleNamespace(kind="folder", key=folder, pk=None)


def record_refusal(refusal: BaseException) -> AuditEntry | None:
    """Write the `refused` audit row of `refusal`, unless its row is stored already; None when
    `refusal` is no audited refusal or its row stands. Call it where the refused change's atomic
    block has ended (a row written inside a block rolled back since is gone, and written again)."""
    audit = getattr(refusal, "audit", None)
    if not isinstance(refusal, FolderOwnershipDenied) or audit is None:
        return None
    if audit["row"] is not None and AuditEntry.objects.filter(pk=audit["row"].pk).exists():
        return None
    subject = _subject(audit["entry"], refusal.folder)
    changes = [{"field": "attempted", "before": None, "after": audit["attempted"]},
               {"field": "folder", "before": None, "after": refusal.folder},
               {"field": "team", "before": None, "after": audit["team"]}]
    audit["row"] = write_audit(entry=subject, action=AuditAction.REFUSED, acting_user=audit["user"],
                               note=refusal.message, changes=changes)
    return audit["row"]
