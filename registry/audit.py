"""The one audit writer: every audit row, of every path, is made here.

Services, the model-save receivers (changes made outside the services, actor "database"), the
bulk importer and client management all write through these functions, so every row carries
the same fields and every row is announced on `audit_recorded` / `audits_recorded` inside the
writing transaction (webhooks, registry.signals). Approval notes name people; `without_names`
is what MCP clients are shown instead.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, cast

from django.contrib.auth.models import AbstractUser, AnonymousUser

from registry.models import AuditEntry
from registry.signals import audit_recorded, audits_recorded

if TYPE_CHECKING:
    from django.contrib.auth.models import User as UserRow  # what the stubs make of settings.AUTH_USER_MODEL

# Who acts: a user of the site (with permissions), an anonymous one, or None for the command line.
User = AbstractUser | AnonymousUser | None


def user_row(user: User) -> UserRow | None:
    """The user a foreign key records (`actor`, `requested_by`, ...): None for the command line,
    an anonymous user or one never saved."""
    return cast("UserRow | None", user if getattr(user, "pk", None) else None)


def actor_name(user: User, fallback: str = "command line") -> str:
    """How an audit row names who acted: the username, or `fallback` for the command line (None)."""
    if user is None:
        return fallback
    return user.get_username() or "anonymous"


def audit_row(
    *,
    entry: Any = None,
    action: str,
    acting_user: User = None,
    actor: str | None = None,
    note: str = "",
    label: str = "",
    from_version: int | None = None,
    to_version: int | None = None,
    changes: list[dict[str, Any]] | None = None,
    entry_kind: str | None = None,
    entry_key: str | None = None,
    entry_id: int | None = None,
) -> AuditEntry:
    """An unsaved audit row about `entry` (or the entry named by kind, key and id)."""
    return AuditEntry(
        actor=user_row(acting_user),
        actor_name=actor or actor_name(acting_user),
        action=action,
        entry_kind=entry.kind if entry is not None else entry_kind or "",
        entry_key=entry.key if entry is not None else entry_key or "",
        entry_id=entry.pk if entry is not None else entry_id,
        label=label,
        from_version=from_version,
        to_version=to_version,
        changes=changes or [],
        note=note,
    )


def write_audit(*, review: Any = None, **fields: Any) -> AuditEntry:
    """Insert one audit row (the fields of `audit_row`) and announce it inside the transaction;
    `review` is the review request the row is about, if any (e-mail to its people needs it)."""
    row = audit_row(**fields)
    row.save(force_insert=True)
    audit_recorded.send(sender=AuditEntry, entry=row, review=review)
    return row


def write_audit_rows(rows: Iterable[AuditEntry], *, batch_size: int = 500) -> list[AuditEntry]:
    """Insert many rows made by `audit_row` at once (bulk writers) and announce them together."""
    created = AuditEntry.objects.bulk_create(list(rows), batch_size=batch_size)
    if created:
        audits_recorded.send(sender=AuditEntry, entries=created)
    return created


def approval_note(note: str, requester: str, approver: str, review_pk: int) -> str:
    """The change note of a version an approval publishes (or a move it makes): who asked, who approved."""
    return f"{note} (requested by {requester}, approved by {approver} in review #{review_pk})"


_APPROVAL_NAMES = re.compile(r" \(requested by .*, approved by .* in review #(\d+)\)\Z", re.DOTALL)


def without_names(note: str) -> str:
    """A change note without the people `approval_note` named: '... (approved in review #3)'."""
    return _APPROVAL_NAMES.sub(r" (approved in review #\1)", note)
