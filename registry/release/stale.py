"""A change of the draft makes the open requests for that draft stale: each requester is told once.

Approval (and a scheduled release at its time) refuses a stale request whatever path changed the
draft (`reviews.staleness`, computed when asked). This module only makes the moment it goes
stale an event: the first draft change after which an open request for the draft no longer
matches it writes one `review_stale` audit row, and stamps the request (`went_stale_at`) so later
edits write no more. The services' changes (an admin save, the API, an import, a restore) reach
`note_stale_requests` through their audit row; a plain ORM save of a draft or of one of its rows (a
shell, a script) through the model receivers (registry/release/receivers.py `_draft_changed`). The e-mail to the
requester (and the approver of a scheduled release) hangs on that row, as every e-mail does.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from registry.audit import write_audit
from registry.authoring.snapshots import content_hash, snapshot_of
from registry.kinds import KINDS
from registry.models import OPEN_STATUSES, AuditAction, AuditEntry, ReviewRequest
from registry.release import reviews

DRAFT_ACTIONS = frozenset({AuditAction.EDIT, AuditAction.RESTORE_DRAFT})


def note_stale_requests(kind: str, entry_id: int) -> list[ReviewRequest]:
    """Stamp and audit the open draft requests of one entry that its current draft no longer matches."""
    waiting = list(ReviewRequest.objects.select_for_update().filter(
        entry_kind=kind, entry_id=entry_id, status__in=OPEN_STATUSES, version_number__isnull=True,
        went_stale_at__isnull=True))
    if not waiting:
        return []
    entry = KINDS[kind].entry_model.objects.filter(pk=entry_id).first()
    if entry is None:
        return []
    digest = content_hash(snapshot_of(entry))
    stale = []
    for review in waiting:
        reason = reviews.staleness(review, entry, draft_hash=digest)
        if not reason:
            continue
        review.went_stale_at = timezone.now()
        review.save(update_fields=["went_stale_at"])
        write_audit(entry=entry, action=AuditAction.REVIEW_STALE, actor="registry", label=review.label,
                    from_version=review.base_version, review=review,
                    note=f"Review #{review.pk} by {review.requested_by_name} ({review.what}) went stale: {reason}")
        stale.append(review)
    return stale


def _draft_changes(rows: Iterable[AuditEntry]) -> set[tuple[str, int]]:
    return {(row.entry_kind, row.entry_id) for row in rows
            if row.action in DRAFT_ACTIONS and row.entry_id is not None and row.entry_kind in KINDS}


def audit_recorded(sender: Any, entry: AuditEntry, **kwargs: Any) -> None:
    for kind, entry_id in _draft_changes([entry]):
        note_stale_requests(kind, entry_id)


def audits_recorded(sender: Any, entries: list[AuditEntry], **kwargs: Any) -> None:
    """Bulk writers (an import of thousands of entries): one query finds the entries with open draft
    requests, and only those are looked at."""
    changed = _draft_changes(entries)
    if not changed:
        return
    ids = sorted({entry_id for _kind, entry_id in changed})
    candidates: set[tuple[str, int]] = set()
    for start in range(0, len(ids), 500):
        candidates.update(ReviewRequest.objects.filter(
            entry_id__in=ids[start:start + 500], status__in=OPEN_STATUSES, version_number__isnull=True,
            went_stale_at__isnull=True).values_list("entry_kind", "entry_id"))
    for kind, entry_id in sorted(changed & candidates):
        note_stale_requests(kind, entry_id)
