"""Who is told of which event: the people a review request, its decision, its discussion, an incident
rollback or a scheduled release concerns, and as which kind of e-mail (what they can turn off).

- a review requested: the publishers who may decide it (`reviews.deciders_of`);
- a decision (approved, rejected, changes requested), a request going stale or superseded: its
  requester (and the approver, when a scheduled release goes stale);
- a comment: the others taking part in the discussion (requester, earlier commenters, the
  approver of a scheduled release); a requester's comment nobody else took part in yet goes to
  those who may decide the request;
- an incident rollback: every publisher of the entry's kind and the authors of the versions
  rolled back;
- a scheduled release gone live, failed, cancelled or moved: its requester and its approver.

Nobody is told of what they did themselves, except of a scheduled release the worker carried
out in their name; inactive users, users without an address and users who turned the kind off
get nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from registry.models import (
    AuditAction,
    AuditEntry,
    EditorPreference,
    MailKind,
    ReviewRequest,
    ScheduledRelease,
    ScheduleStatus,
)
from registry.release import discussion, reviews, services

ACTION_KINDS: dict[str, str] = {
    AuditAction.REVIEW_REQUESTED: MailKind.REVIEW_REQUESTED,
    AuditAction.REVIEW_APPROVED: MailKind.REVIEW_OUTCOME,
    AuditAction.REVIEW_REJECTED: MailKind.REVIEW_OUTCOME,
    AuditAction.CHANGES_REQUESTED: MailKind.REVIEW_OUTCOME,
    AuditAction.REVIEW_STALE: MailKind.REVIEW_OUTCOME,
    AuditAction.REVIEW_SUPERSEDED: MailKind.REVIEW_OUTCOME,
    AuditAction.REVIEW_COMMENTED: MailKind.COMMENTS,
    AuditAction.INCIDENT_ROLLBACK: MailKind.INCIDENTS,
    AuditAction.RELEASE_WENT_LIVE: MailKind.SCHEDULED,
    AuditAction.RELEASE_FAILED: MailKind.SCHEDULED,
    AuditAction.RELEASE_CANCELLED: MailKind.SCHEDULED,
    AuditAction.RELEASE_RESCHEDULED: MailKind.SCHEDULED,
}
# Carried out by the worker in the approver's name: the approver is told too.
WORKER_ACTIONS = frozenset({AuditAction.RELEASE_WENT_LIVE, AuditAction.RELEASE_FAILED})


def latest_schedule(review: ReviewRequest) -> ScheduledRelease | None:
    return review.schedules.order_by("-created_at", "-id").first()


def _approver(review: ReviewRequest) -> Any:
    schedule = latest_schedule(review)
    return schedule.scheduled_by if schedule is not None else None


def _people(audit: AuditEntry, review: ReviewRequest | None) -> list[tuple[Any, str]]:
    """(user, kind) pairs for one event, before anyone is filtered out."""
    action, kind = audit.action, ACTION_KINDS[audit.action]
    if action == AuditAction.INCIDENT_ROLLBACK:
        return _incident(audit)
    if review is None:
        return []
    requester = review.requested_by
    if action == AuditAction.REVIEW_REQUESTED:
        return [(user, kind) for user in reviews.deciders_of(review)]
    if action == AuditAction.REVIEW_STALE:
        scheduled = review.schedules.filter(status=ScheduleStatus.SCHEDULED).first()
        return [(requester, kind)] + ([(scheduled.scheduled_by, MailKind.SCHEDULED)] if scheduled else [])
    if action == AuditAction.REVIEW_COMMENTED:
        others = [requester, *(c.author for c in discussion.discussion(review)), _approver(review)]
        told = [(user, kind) for user in others if user is not None and user.pk != audit.actor_id]
        if not told:
            told = [(user, kind) for user in reviews.deciders_of(review)]
        return told
    if kind == MailKind.SCHEDULED:
        return [(requester, kind), (_approver(review), kind)]
    return [(requester, kind)]


def _incident(audit: AuditEntry) -> list[tuple[Any, str]]:
    from registry.kinds import KINDS

    if audit.entry_kind not in KINDS or audit.entry_id is None:
        return []
    entry = KINDS[audit.entry_kind].entry_model.objects.filter(pk=audit.entry_id).first()
    if entry is None:
        return []
    people: list[tuple[Any, str]] = [(user, MailKind.INCIDENTS) for user in services.publishers_of(entry)]
    if audit.from_version is not None and audit.to_version is not None:
        rolled_back = entry.versions.filter(number__gt=audit.to_version, number__lte=audit.from_version)
        people += [(version.author, MailKind.INCIDENTS) for version in rolled_back.select_related("author")]
    return people


def recipients(audit: AuditEntry, review: ReviewRequest | None) -> list[tuple[Any, str]]:
    """The people to e-mail about `audit` (a row `ACTION_KINDS` names), each once, with the kind."""
    if audit.action not in ACTION_KINDS:
        return []
    chosen: dict[int, tuple[Any, str]] = {}
    for user, kind in _people(audit, review):
        if user is None or user.pk in chosen:
            continue
        if user.pk == audit.actor_id and audit.action not in WORKER_ACTIONS:
            continue
        if not user.is_active or not user.email:
            continue
        chosen[user.pk] = (user, kind)
    if not chosen:
        return []
    off = kinds_off(chosen)
    return [(user, kind) for pk, (user, kind) in chosen.items() if kind not in off.get(pk, ())]


def kinds_off(user_ids: Iterable[int]) -> dict[int, frozenset[str]]:
    """The kinds of e-mail each of these users turned off in their preferences: asked when an event
    is queued and again when its message is sent (a kind turned off meanwhile is not sent)."""
    rows = EditorPreference.objects.filter(user_id__in=sorted(set(user_ids))).values_list("user_id", "mail_off")
    return {user_id: frozenset(off or ()) for user_id, off in rows}
