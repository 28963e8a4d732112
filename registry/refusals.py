"""Refused changes are audited: a save, move, delete, publish, decision or import that a
governance rule refused leaves one audit row, action `refused`: team ownership (registry.roles),
a missing role (publishing, the emergency override, changing a label's protection or a folder's
owner), a protected label moved without an approval, approving one's own request, and acting on
someone else's review or schedule.

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
from typing import Any, TypeVar

from django.utils.translation import gettext_lazy as _

from registry.audit import User, write_audit
from registry.errors import RegistryError
from registry.models import AuditAction, AuditEntry

# What was refused, as the audit row's `attempted` change says it (and the admin reads it).
ATTEMPTS: dict[str, Any] = {
    "create": _("create an entry"), "edit": _("change the draft"), "move": _("move it to another folder"),
    "delete": _("delete it"), "restore": _("restore the draft from a version"), "import": _("import it"),
    "request_review": _("request a review"), "decide": _("publish or decide a review"),
    "publish": _("publish, move a label or roll back"),
    "override": _("use the emergency override of a protected label"),
    "move_protected": _("move a protected label without an approved review"),
    "approve_own": _("approve their own review request"), "reject_own": _("reject their own review request"),
    "protect": _("change whether a label is protected"),
    "own_folder": _("change who owns a folder"),
    "comment": _("comment on a review"), "ask_changes": _("ask for changes to a review"),
    "resubmit": _("ask again for someone else's review"), "withdraw": _("withdraw someone else's review request"),
    "schedule": _("cancel or move a scheduled release"),
}


R = TypeVar("R", bound=RegistryError)


def attach(refusal: R, *, user: User, entry: Any, attempted: str, team: str = "", folder: str = "") -> R:
    """Give `refusal` what its audit row names, where a rule refuses (registry.roles.folder_refusal,
    the release services' role and approval checks): `attempted` is a key of ATTEMPTS; `team`
    the owning team of an ownership refusal; `folder` its folder, or the folder acted on."""
    refusal.audit = {"user": user, "entry": entry, "attempted": attempted, "team": team,  # type: ignore[attr-defined]
                     "folder": getattr(refusal, "folder", "") or folder, "row": None}
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
    if not isinstance(refusal, RegistryError) or audit is None:
        return None
    if audit["row"] is not None and AuditEntry.objects.filter(pk=audit["row"].pk).exists():
        return None
    subject = _subject(audit["entry"], audit["folder"])
    changes = [{"field": "attempted", "before": None, "after": audit["attempted"]}]
    if audit["team"]:
        changes += [{"field": "folder", "before": None, "after": audit["folder"]},
                    {"field": "team", "before": None, "after": audit["team"]}]
    audit["row"] = write_audit(entry=subject, action=AuditAction.REFUSED, acting_user=audit["user"],
                               note=refusal.message, changes=changes)
    return audit["row"]
