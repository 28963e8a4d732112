"""What the admin home page tells each person: incident rollbacks (publishers), reviews waiting
for them, what became of their requests, and the state of the entries they work on.

Publishers should not have to poll the review queue, editors should learn that a request was
rejected (and why) without asking, and when one publisher rolls a protected label back alone
(an incident rollback, issue 12 §6) the other publishers should see it the next time they look.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractUser, AnonymousUser
from django.urls import reverse
from django.utils import timezone
from django.utils.translation import gettext as _

from registry.admin.badges import badges_html, entry_badges, states_of, when_text
from registry.admin.reviews import entry_admin_url
from registry.admin.served_now import last_rollback, rollback_sentence, served_version
from registry.authoring.snapshots import for_snapshots
from registry.kinds import KINDS
from registry.models import AuditAction, AuditEntry, ReviewRequest, ReviewStatus, ScheduleStatus
from registry.release import reviews, schedules

RECENT = 10
INCIDENT_DAYS = 14  # how long an incident rollback stays on the publishers' home page


def _review_url(review: ReviewRequest) -> str:
    return reverse("admin:registry_reviewrequest_change", args=[review.pk])


def _waiting_for(user: AbstractUser | AnonymousUser) -> list[ReviewRequest]:
    """Pending requests this user may decide: not their own, and of a kind they may publish."""
    pending = ReviewRequest.objects.filter(status=ReviewStatus.PENDING).exclude(requested_by_id=user.pk)
    return [review for review in pending.order_by("created_at", "id") if reviews.can_decide(user, review)]


def _request_outcome(review: ReviewRequest) -> str:
    if review.status == ReviewStatus.APPROVED:
        if review.result_version:
            return _served_outcome(review)
        return _("approved by %(name)s") % {"name": review.decided_by_name}
    if review.status == ReviewStatus.REJECTED:
        return _("rejected by %(name)s") % {"name": review.decided_by_name}
    if review.status == ReviewStatus.SUPERSEDED:
        return _("superseded: the label moved before anyone decided")
    if review.status == ReviewStatus.WITHDRAWN:
        return _("withdrawn by you")
    if review.status == ReviewStatus.FAILED:
        return _("approved by %(name)s, but the scheduled release failed: ask again") % {
            "name": review.decided_by_name}
    entry = reviews.entry_of(review)
    if entry is not None and reviews.staleness(review, entry):
        return _("stale: the draft changed after the request, file a new one")
    if review.status == ReviewStatus.SCHEDULED:
        schedule = review.schedules.filter(status=ScheduleStatus.SCHEDULED).first()
        if schedule is not None:
            return _("approved by %(name)s: goes live at %(when)s") % {
                "name": review.decided_by_name, "when": when_text(schedule.go_live_at)}
    if review.changes_requested_at is not None:
        return _("changes requested: see the discussion")
    return _("waiting for a reviewer")


def _served_outcome(review: ReviewRequest) -> str:
    """An approved release as it stands now: still served, rolled back (who, when, why) or moved on."""
    approved = _("approved by %(name)s: v%(number)s is served") % {
        "name": review.decided_by_name, "number": review.result_version}
    entry = reviews.entry_of(review)
    now = served_version(entry, review.label) if entry is not None else review.result_version
    if now is None or now == review.result_version:
        return approved
    was = _("approved by %(name)s: v%(number)s was served") % {
        "name": review.decided_by_name, "number": review.result_version}
    rolled = last_rollback(entry, review.label) if entry is not None else None
    if rolled is not None and rolled.to_version == now:
        return f"{was}. {rollback_sentence(rolled)}"
    return f"{was}. " + _("“%(label)s” serves v%(number)s now") % {"label": review.label, "number": now}


def _my_entries(user: AbstractUser | AnonymousUser) -> list[dict[str, Any]]:
    """The entries this user saved last, newest first, with their badges."""
    rows: list[dict[str, Any]] = []
    for kind in KINDS.values():
        entries = list(for_snapshots(kind.entry_model.objects.filter(updated_by=user.get_username())
                                     .prefetch_related("labels__version")).order_by("-updated_at")[:RECENT])
        states = states_of(entries)
        for entry in entries:
            rows.append({"entry": entry, "kind": kind.name, "url": entry_admin_url(kind.name, entry.pk),
                         "badges": badges_html(entry_badges(entry, states[entry.pk])), "updated_at": entry.updated_at})
    rows.sort(key=lambda row: row["updated_at"], reverse=True)
    return rows[:RECENT]


def recent_incident_rollbacks(*, days: int = INCIDENT_DAYS, limit: int = RECENT) -> list[dict[str, Any]]:
    """Incident rollbacks of the last `days`, newest first: who, which label of which entry, from/to, why, when."""
    since = timezone.now() - timedelta(days=days)
    rows = AuditEntry.objects.filter(action=AuditAction.INCIDENT_ROLLBACK, created_at__gte=since)
    out = []
    for row in rows.order_by("-created_at", "-id")[:limit]:
        url = entry_admin_url(row.entry_kind, row.entry_id, "history") if row.entry_id else ""
        out.append({"audit": row, "url": url})
    return out


def dashboard(user: AbstractUser | AnonymousUser) -> dict[str, Any]:
    """The home page panels for `user`; a panel with nothing to say is left out by the template."""
    if not user.is_authenticated:
        return {}
    is_publisher = any(user.has_perm(kind.publish_permission) for kind in KINDS.values())
    mine = ReviewRequest.objects.filter(requested_by_id=user.pk).order_by("-created_at", "-id")[:RECENT]
    return {
        "is_publisher": is_publisher,
        "incidents": recent_incident_rollbacks() if is_publisher else [],
        "waiting": [{"review": r, "url": _review_url(r)} for r in _waiting_for(user)]
        if is_publisher else [],
        "my_requests": [{"review": r, "outcome": _request_outcome(r), "url": _review_url(r)}
                        for r in mine],
        "my_entries": _my_entries(user),
        "scheduled": _scheduled(user),
    }


def _scheduled(user: AbstractUser | AnonymousUser) -> list[dict[str, Any]]:
    """Releases waiting for their go-live time that this user may see (their kind's reviews), soonest first."""
    if not user.has_perm("registry.view_reviewrequest"):
        return []
    return [{"schedule": row, "review": row.review, "when": when_text(row.go_live_at), "url": _review_url(row.review),
             "entry_url": entry_admin_url(row.review.entry_kind, row.review.entry_id)}
            for row in schedules.upcoming().order_by("go_live_at", "id")[:RECENT * 5]]
