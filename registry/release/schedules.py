"""Scheduled releases: an approval with a go-live time, carried out by `registry_worker` at that time.

The approval itself (`reviews.approve(..., go_live_at=...)`) checks everything an immediate one
does and records the decision; the request is then `scheduled`. At the go-live time `run_due`
carries it out through `reviews.carry_out`, the code an immediate approval runs, so the release
is audited, recorded in the change log and announced to clients as any release. The approver is
the acting user; the audit rows name them "scheduled by <approver>".

Exactly once, with any number of workers: a release is claimed and carried out in ONE
transaction. The claim is a compare-and-set of its status (scheduled -> done) on a row read with
`select_for_update(skip_locked=True)` where the database has it; a second worker either skips the
locked row or, once the first has committed, no longer finds it scheduled. If the worker dies
half-way, the transaction rolls back whole and the release is still scheduled for the next pass.

Before go-live the request can go stale as any request does (the draft changed, or the label
moved): it is then not carried out; the release is marked failed with the reason, and the
request too. A publisher may cancel a scheduled release (the request then waits for a decision
again) or move its time; the requester may cancel it as well. Every step is audited.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone
from django.utils.translation import gettext as _

from registry import refusals
from registry.audit import User, actor_name, write_audit
from registry.changes import service_transaction
from registry.errors import InvalidEntry, PublishPermissionDenied, RegistryError, ReviewClosed, StaleReview
from registry.models import AuditAction, ReviewRequest, ReviewStatus, ScheduledRelease, ScheduleStatus
from registry.release import reviews, services

log = logging.getLogger(__name__)


def scheduled_by_actor(name: str) -> str:
    """How the audit rows of a scheduled release name who acted: the approver, scheduled."""
    return f"scheduled by {name}"


def upcoming() -> QuerySet[ScheduledRelease]:
    """Releases waiting for their time, soonest first (the admin's home page, the API's list)."""
    return ScheduledRelease.objects.filter(status=ScheduleStatus.SCHEDULED).select_related("review")


def for_entry(kind: str, entry_id: int) -> QuerySet[ScheduledRelease]:
    """Every release scheduled for one entry, newest first (its change and history pages)."""
    return (ScheduledRelease.objects.filter(review__entry_kind=kind, review__entry_id=entry_id)
            .select_related("review").order_by("-go_live_at", "-id"))


# After a failed attempt (not the release's own refusal), wait this long before the next; after
# the last one the release is recorded as failed and its people are told (about 18 minutes in all).
RETRY_S = (30, 60, 120, 300, 600)


def _due(now: datetime) -> QuerySet[ScheduledRelease]:
    return ScheduledRelease.objects.filter(Q(retry_at__isnull=True) | Q(retry_at__lte=now),
                                           status=ScheduleStatus.SCHEDULED, go_live_at__lte=now)


def next_due_in(*, now: datetime | None = None) -> float | None:
    """Seconds until the next scheduled release is due (None: nothing is scheduled)."""
    now = now or timezone.now()
    nxt = (upcoming().annotate(due_at=Greatest("go_live_at", Coalesce("retry_at", "go_live_at")))
           .order_by("due_at").values_list("due_at", flat=True).first())
    return None if nxt is None else max(0.0, (nxt - now).total_seconds())


class _AttemptFailed(Exception):
    """Carrying out `row` failed for a reason that is not the release's own: retried later."""

    def __init__(self, row: ScheduledRelease) -> None:
        super().__init__(row.pk)
        self.row = row


def run_due(*, now: datetime | None = None) -> list[ScheduledRelease]:
    """Carry out every release due at `now` (default: now), each exactly once; returns those this
    worker carried out or recorded as failed."""
    handled: list[ScheduledRelease] = []
    passed: set[int] = set()
    while True:
        moment = now or timezone.now()
        try:
            found = _run_one(moment, exclude=passed)
        except _AttemptFailed as failed:  # its claim rolled back; the releases after it still go
            passed.add(failed.row.pk)
            if _retry_later(failed.row, failed.__cause__, moment):
                handled.append(failed.row)
            continue
        if found is None:
            return handled
        row, ran = found
        passed.add(row.pk)
        if ran:
            handled.append(row)


def _retry_later(row: ScheduledRelease, cause: BaseException | None, now: datetime) -> bool:
    """Record a failed attempt: retried after the next step of RETRY_S, or, after the last one, the
    release fails (audited; its requester and approver are told). Returns whether it failed."""
    reason = f"{type(cause).__name__}: {cause}"[:300] if cause is not None else "unknown error"
    log.error("scheduled release %s could not be carried out (attempt %s): %s", row.pk, row.attempts + 1, reason,
              exc_info=cause)
    with transaction.atomic():
        current = ScheduledRelease.objects.select_for_update().filter(
            pk=row.pk, status=ScheduleStatus.SCHEDULED).first()
        if current is None:  # cancelled or carried out by another worker meanwhile
            return False
        current.attempts += 1
        current.last_error = reason
        if current.attempts > len(RETRY_S):
            current.finished_at = now
            current.save(update_fields=["attempts", "last_error", "finished_at"])
            _fail(current, _("it could not be carried out after %(count)s attempts; the last error was: "
                             "%(reason)s") % {"count": current.attempts, "reason": reason})
            row.status = current.status
            return True
        current.retry_at = now + timedelta(seconds=RETRY_S[current.attempts - 1])
        current.save(update_fields=["attempts", "last_error", "retry_at"])
    return False


def _run_one(now: datetime, *, exclude: set[int]) -> tuple[ScheduledRelease, bool] | None:
    """Claim one due release and carry it out in the same transaction. None when nothing is due;
    (row, False) when another worker claimed it first."""
    with transaction.atomic():
        rows = _due(now).exclude(pk__in=exclude).order_by("go_live_at", "id")
        if connection.features.has_select_for_update_skip_locked:
            rows = rows.select_for_update(skip_locked=True, of=("self",))
        row = rows.first()
        if row is None:
            return None
        claimed = ScheduledRelease.objects.filter(pk=row.pk, status=ScheduleStatus.SCHEDULED).update(
            status=ScheduleStatus.DONE, finished_at=now)
        if not claimed:  # compare-and-set lost: another worker carried it out
            return row, False
        row.status, row.finished_at = ScheduleStatus.DONE, now
        try:
            with transaction.atomic():  # a failure undoes the release's own writes, not the claim
                number = _go_live(row)
        except RegistryError as exc:
            _fail(row, exc.message)
        except Exception as exc:  # an outage or a bug: the claim rolls back with it, retried later
            raise _AttemptFailed(row) from exc
        else:
            row.result_version = number
            row.finished_by_name = scheduled_by_actor(row.scheduled_by_name)
            row.outcome = f"v{number} went live on '{row.review.label}'."
            row.save(update_fields=["result_version", "finished_by_name", "outcome"])
        return row, True


@service_transaction
def _go_live(row: ScheduledRelease) -> int:
    """What the approval asked, done now as the approver (the request's staleness checked again)."""
    review = ReviewRequest.objects.select_for_update().get(pk=row.review_id)
    entry = reviews.entry_of(review)
    if entry is None:
        raise StaleReview(_("The %(kind)s of review #%(pk)s no longer exists.")
                          % {"kind": review.entry_kind, "pk": review.pk})
    approver = row.scheduled_by
    if approver is None:
        raise PublishPermissionDenied(_("The publisher who approved review #%(pk)s no longer exists, so nobody "
                                        "releases it.") % {"pk": review.pk})
    entry = services._lock(entry)
    stale = reviews.staleness(review, entry)
    if stale:
        raise StaleReview(stale)
    actor = scheduled_by_actor(row.scheduled_by_name)
    number = reviews.carry_out(review, entry, acting_user=approver, actor=actor, approver=row.scheduled_by_name)
    review.status = ReviewStatus.APPROVED
    review.result_version = number
    review.save(update_fields=["status", "result_version"])
    write_audit(entry=entry, action=AuditAction.RELEASE_WENT_LIVE, acting_user=approver, actor=actor,
                label=review.label, from_version=review.base_version, to_version=number, review=review,
                note=f"Review #{review.pk} by {review.requested_by_name} ({review.what}) went live as scheduled "
                     f"for {row.go_live_at:%Y-%m-%d %H:%M:%S %Z}.")
    return number


def _fail(row: ScheduledRelease, reason: str) -> None:
    """Record why the release did not go live, on it and its request (audited: the people are told)."""
    row.status = ScheduleStatus.FAILED
    row.outcome = reason
    row.finished_by_name = scheduled_by_actor(row.scheduled_by_name)
    row.save(update_fields=["status", "outcome", "finished_by_name"])
    review = ReviewRequest.objects.select_for_update().get(pk=row.review_id)
    review.status = ReviewStatus.FAILED
    review.save(update_fields=["status"])
    write_audit(entry=reviews.entry_of(review), entry_kind=review.entry_kind, entry_key=review.entry_key,
                entry_id=review.entry_id, action=AuditAction.RELEASE_FAILED, acting_user=row.scheduled_by,
                actor=scheduled_by_actor(row.scheduled_by_name), label=review.label,
                from_version=review.base_version, to_version=review.version_number, review=review,
                note=f"The release of review #{review.pk} ({review.what}) scheduled for "
                     f"{row.go_live_at:%Y-%m-%d %H:%M:%S %Z} did not go live: {reason}")
    log.warning("scheduled release %s of review #%s failed: %s", row.pk, review.pk, reason)


def _locked_schedule(review: ReviewRequest) -> ScheduledRelease:
    row = (ScheduledRelease.objects.select_for_update()
           .filter(review_id=review.pk, status=ScheduleStatus.SCHEDULED).first())
    if row is None:
        raise ReviewClosed(_("Review #%(pk)s has no release scheduled (it may have gone live or been cancelled "
                             "meanwhile).") % {"pk": review.pk})
    return row


def can_cancel(user: User, review: ReviewRequest) -> bool:
    """Its requester, or anyone who may decide it."""
    is_requester = user is not None and review.requested_by_id is not None and review.requested_by_id == user.pk
    return is_requester or reviews.can_decide(user, review)


@service_transaction
def cancel(review: ReviewRequest, *, acting_user: User, reason: str = "") -> ScheduledRelease:
    """Cancel the release scheduled for `review`: nothing goes live, and the request waits for a
    decision again (a publisher may approve it now, at another time, or reject it)."""
    if not can_cancel(acting_user, review):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may not cancel the release scheduled for review #%(pk)s: its requester or a publisher who "
              "may decide it can.") % {"user": actor_name(acting_user), "pk": review.pk}),
            user=acting_user, entry=reviews.entry_of(review), attempted="schedule")
    row = _locked_schedule(review)
    reason = (reason or "").strip()
    now = timezone.now()
    row.status, row.finished_at, row.finished_by_name = ScheduleStatus.CANCELLED, now, actor_name(acting_user)
    row.outcome = reason
    row.save(update_fields=["status", "finished_at", "finished_by_name", "outcome"])
    locked = ReviewRequest.objects.select_for_update().get(pk=review.pk)
    locked.status = ReviewStatus.PENDING
    locked.save(update_fields=["status"])
    write_audit(entry=reviews.entry_of(locked), entry_kind=locked.entry_kind, entry_key=locked.entry_key,
                entry_id=locked.entry_id, action=AuditAction.RELEASE_CANCELLED, acting_user=acting_user,
                label=locked.label, from_version=locked.base_version, to_version=locked.version_number,
                review=locked,
                note=f"Cancelled the release of review #{locked.pk} ({locked.what}) scheduled for "
                     f"{row.go_live_at:%Y-%m-%d %H:%M:%S %Z}; the request waits for a decision again"
                     + (f": {reason}" if reason else "."))
    return row


@service_transaction
def reschedule(review: ReviewRequest, *, acting_user: User, go_live_at: datetime) -> ScheduledRelease:
    """Move the go-live time of the release scheduled for `review` (a publisher who may decide it)."""
    if not reviews.can_decide(acting_user, review):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may not move the release scheduled for review #%(pk)s: a publisher who may decide it "
              "can.") % {"user": actor_name(acting_user), "pk": review.pk}),
            user=acting_user, entry=reviews.entry_of(review), attempted="schedule")
    go_live_at = timezone.make_aware(go_live_at) if timezone.is_naive(go_live_at) else go_live_at
    if go_live_at <= timezone.now():
        raise InvalidEntry([_("The go-live time %(when)s has passed: choose a later one.")
                            % {"when": f"{timezone.localtime(go_live_at):%Y-%m-%d %H:%M %Z}"}])
    row = _locked_schedule(review)
    before = row.go_live_at
    row.go_live_at = go_live_at
    # A new time is a new start: the failed attempts of the old one do not count against it.
    row.attempts, row.retry_at, row.last_error = 0, None, ""
    row.save(update_fields=["go_live_at", "attempts", "retry_at", "last_error"])
    write_audit(entry=reviews.entry_of(review), entry_kind=review.entry_kind, entry_key=review.entry_key,
                entry_id=review.entry_id, action=AuditAction.RELEASE_RESCHEDULED, acting_user=acting_user,
                label=review.label, from_version=review.base_version, to_version=review.version_number,
                review=review, changes=[{"field": "go_live_at", "before": before.isoformat(),
                                         "after": go_live_at.isoformat()}],
                note=f"Moved the release of review #{review.pk} ({review.what}) from "
                     f"{before:%Y-%m-%d %H:%M:%S %Z} to {go_live_at:%Y-%m-%d %H:%M:%S %Z}.")
    return row
