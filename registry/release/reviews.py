"""Four eyes for protected labels: request publication, approve, reject, withdraw.

An editor (or anyone who may change the entry) asks for something to be served on a label,
usually `production`, with a note: either the current draft (its content hash and snapshot are
kept, so the reviewer approves exactly what was asked) or an existing version (a label move or
a roll back), optionally as a percentage rollout. A publisher other than the requester approves
or rejects it with a comment. Approval does what was asked through the normal services path
(`services.publish` / `move_label` / `rollouts.set_rollout`, so audit rows, change log and
client notifications are the usual ones) inside `services.approved_move`, the only way besides
an audited override to move a protected label.

Approval re-checks, with the entry row locked (`select_for_update`), that the request is still
pending, that the label still serves what it served when the request was made, and (for a
draft) that the draft is unchanged (`staleness`, the one rule); otherwise it raises StaleReview
and nothing changes. Two concurrent approvals for one label therefore serialise on the entry row
and the second one finds the label moved: the label never ends up in a state nobody approved.

An approval may carry a go-live time: the request is then `scheduled` and `registry_worker`
carries it out at that time (registry/release/schedules.py) through `carry_out`, the same code
an immediate approval runs, after the same staleness check.

Who may decide a request is `can_decide`; `deciders_of` lists those people (the review-requested
e-mail goes to them), so narrowing who decides (e.g. by ownership) is one change in one place.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Prefetch
from django.utils import timezone
from django.utils.translation import gettext as _

from registry import refusals, roles
from registry.audit import User, actor_name, approval_note, user_row, write_audit
from registry.authoring.snapshots import (
    Payloads,
    content_hash,
    diff_snapshots,
    for_snapshots,
    snapshot_of,
    store_payloads,
)
from registry.authoring.validation import validate_entry
from registry.changes import service_transaction
from registry.errors import (
    InvalidEntry,
    InvalidRollout,
    NothingToPublish,
    PublishPermissionDenied,
    RegistryError,
    ReviewClosed,
    SelfApproval,
    StaleReview,
)
from registry.kinds import KINDS, kind_of
from registry.models import (
    PRODUCTION,
    AuditAction,
    ReviewRequest,
    ReviewStatus,
    ScheduledRelease,
    VersionedEntry,
)
from registry.models.base import label_name_validator
from registry.release import argument_guard, services


def can_request(user: User, entry: VersionedEntry) -> bool:
    """Whoever may change the entry's draft may ask for it to be released."""
    if user is None:
        return True
    model_name = kind_of(entry).entry_model._meta.model_name
    return bool(user.is_active
                and (user.has_perm(f"registry.change_{model_name}") or services.can_publish(user, entry))
                and roles.in_owning_team(user, entry.folder))


@service_transaction
def publish_or_request(
    entry: VersionedEntry,
    *,
    acting_user: User,
    note: str,
    labels: list[str],
    override_reason: str | None = None,
) -> tuple[Any, list[ReviewRequest]]:
    """Publish the draft and move the labels the user may move; for each protected one (unless an
    override reason is given) file a review request for the new version instead. The admin's
    Publish page and the REST API's `publish` with `request_review` both release through this.

    Returns the version published and the requests filed (one per held label)."""
    held = [] if override_reason else [name for name in labels if services.is_protected(entry, name)]
    version = services.publish(entry, acting_user=acting_user, note=note,
                               labels=[name for name in labels if name not in held], override_reason=override_reason)
    filed = [request_publication(entry, acting_user=acting_user, note=note, label=name, version_number=version.number)
             for name in held]
    return version, filed


def can_decide(user: User, review: ReviewRequest, entry: VersionedEntry | None = None) -> bool:
    """A publisher of the entry's kind (in the folder's owning team, if it has one) who did not file the request."""
    if user is not None and review.requested_by_id is not None and review.requested_by_id == user.pk:
        return False
    entry = entry if entry is not None else entry_of(review)
    return entry is not None and services.can_publish(user, entry)


def deciders_of(review: ReviewRequest) -> list[Any]:
    """Everyone who may decide `review` (`can_decide` is the rule): who is asked to review it."""
    entry = entry_of(review)
    if entry is None:
        return []
    return [user for user in services.publishers_of(entry) if can_decide(user, review, entry)]


def entry_of(review: ReviewRequest) -> VersionedEntry | None:
    return KINDS[review.entry_kind].entry_model.objects.filter(pk=review.entry_id).first()


def _label_version(entry: VersionedEntry, label: str) -> int | None:
    row = kind_of(entry).label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    return row.version.number if row is not None else None


def staleness(review: ReviewRequest, entry: VersionedEntry, *, draft_hash: str | None = None,
              label_versions: dict[str, int] | None = None) -> str:
    """Why `review` can no longer be carried out as asked, or "" while it can: the label moved since
    the request, or (a request for the draft) the draft changed since.

    The one rule the approval, a scheduled release at its go-live time, the review page, the entry's
    badges and the stale notice all ask; `draft_hash` and `label_versions` (name -> version number)
    spare a caller that has them a query."""
    current = (label_versions.get(review.label) if label_versions is not None
               else _label_version(entry, review.label))
    if current != review.base_version:
        was = f"v{review.base_version}" if review.base_version is not None else _("nothing")
        now = f"v{current}" if current is not None else _("nothing")
        return (_("Review #%(pk)s is stale: '%(label)s' served %(was)s when it was requested and serves %(now)s "
                  "now. Ask for a new review.")
                % {"pk": review.pk, "label": review.label, "was": was, "now": now})
    if review.version_number is None:
        digest = draft_hash if draft_hash is not None else content_hash(snapshot_of(entry))
        if digest != review.content_hash:
            return (_("Review #%(pk)s is stale: the draft of %(key)s changed after the request. Ask for a new "
                      "review of the current draft.") % {"pk": review.pk, "key": entry.key})
    return ""


def staleness_of(requests: Iterable[ReviewRequest]) -> dict[int, str]:
    """`staleness` of each open request in `requests` by primary key ("" while it can be carried
    out), reading their entries (labels and drafts) in a few queries for the whole lot: a list of
    requests (the review queue, an entry's page) shows the stale state before anyone acts, by the
    same rule approval applies, without a snapshot and queries per row."""
    by_kind: dict[str, list[ReviewRequest]] = defaultdict(list)
    for review in requests:
        if review.is_open:
            by_kind[review.entry_kind].append(review)
    found: dict[int, str] = {}
    for kind, rows in by_kind.items():
        models = KINDS[kind]
        labels = models.label_model.objects.select_related("version").defer("version__snapshot", "version__listing")
        entries = {entry.pk: entry for entry in for_snapshots(models.entry_model.objects.filter(
            pk__in={review.entry_id for review in rows}).prefetch_related(Prefetch("labels", queryset=labels)))}
        digests: dict[int, str] = {}
        for review in rows:
            entry = entries.get(review.entry_id)
            if entry is None:
                found[review.pk] = (_("The %(kind)s of review #%(pk)s no longer exists.")
                                    % {"kind": review.entry_kind, "pk": review.pk})
                continue
            if review.version_number is None and entry.pk not in digests:
                digests[entry.pk] = content_hash(snapshot_of(entry))
            found[review.pk] = staleness(review, entry, draft_hash=digests.get(entry.pk),
                                         label_versions={row.name: row.version.number for row in entry.labels.all()})
    return found


@service_transaction
def request_publication(
    entry: VersionedEntry,
    *,
    acting_user: User,
    note: str,
    label: str = PRODUCTION,
    version_number: int | None = None,
    percent: int | None = None,
    previous: ReviewRequest | None = None,
) -> ReviewRequest:
    """Ask for the current draft (or `version_number`) to be served on `label`; `percent` asks for a rollout.

    A draft identical to the newest version becomes a request for that version. `previous` is an
    earlier request this one asks again (its discussion is shown with this one).
    """
    refusal = (roles.folder_refusal(acting_user, [entry.folder], entry=entry, attempted="request_review")
               if acting_user is not None else None)
    if refusal is not None:
        raise refusal
    if not can_request(acting_user, entry):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may not change %(kind)ss, so may not request their publication either.")
            % {"user": actor_name(acting_user), "kind": entry.kind}), user=acting_user, entry=entry,
            attempted="request_review")
    note = (note or "").strip()
    if not note:
        raise InvalidEntry([_("A note is required: say what should be released and why.")])
    try:
        label_name_validator(label)
    except ValidationError as exc:
        raise InvalidEntry(list(exc.messages)) from exc
    if percent is not None and (isinstance(percent, bool) or not isinstance(percent, int) or not 1 <= percent <= 99):
        raise InvalidRollout(_("A rollout request takes a percentage from 1 to 99 (100 is a full release: leave it "
                               "out)."))
    entry = services._lock(entry)
    base = _label_version(entry, label)
    digest, snapshot = "", None
    payloads: Payloads = {}
    if version_number is None:
        report = validate_entry(entry)
        if not report.ok:
            raise InvalidEntry(report.errors)
        snapshot = snapshot_of(entry, payloads)
        digest = content_hash(snapshot)
        latest = services.latest_version(entry)
        if latest is not None and latest.content_hash == digest:
            version_number, digest, snapshot = latest.number, "", None
    if percent is not None and base is None:
        raise InvalidRollout(_("%(key)s has no '%(label)s' label yet, so there is nothing to roll out from: "
                               "request a full release first.") % {"key": entry.key, "label": label})
    target = None
    if version_number is not None:
        target = entry.versions.filter(number=version_number).first()
        if target is None:
            raise RegistryError(_("%(key)s has no version %(number)s.") % {"key": entry.key, "number": version_number})
        if base == version_number:
            raise NothingToPublish(_("'%(label)s' already serves v%(number)s of %(key)s.")
                                   % {"label": label, "number": version_number, "key": entry.key})
    asked = target if target is not None else argument_guard.Candidate.of_draft(
        _next_number(entry), snapshot or {})
    unfillable = argument_guard.release_refusal(entry, label, asked)
    if unfillable:  # an approval could never carry it out: say so to the requester, not at approval or go-live
        raise InvalidEntry(unfillable)
    if snapshot is not None:
        # The reviewer is shown the requested texts, on any worker, long after: store them now
        # (content-addressed and write-once; an approval publishes exactly these bytes).
        store_payloads(payloads)
    review = ReviewRequest.objects.create(
        entry_kind=entry.kind, entry_id=entry.pk, entry_key=entry.key, label=label,
        content_hash=digest, snapshot=snapshot, version_number=version_number, base_version=base, percent=percent,
        requested_by=user_row(acting_user),
        requested_by_name=actor_name(acting_user), note=note, previous=previous,
    )
    before = entry.versions.filter(number=base).first() if base is not None else None
    write_audit(
        entry=entry, action=AuditAction.REVIEW_REQUESTED, acting_user=acting_user, label=label,
        note=f"Review #{review.pk} ({review.what}): {note}", from_version=base, to_version=version_number,
        changes=diff_snapshots(before.snapshot if before else None, target.snapshot if target else snapshot),
        review=review,
    )
    return review


@service_transaction
def request_again(review: ReviewRequest, *, acting_user: User) -> ReviewRequest:
    """The requester asks again for what a stale (or failed) request asked, with the current draft:
    a new request that continues the old one's discussion; the old one, if still open, is closed
    as superseded by it."""
    if acting_user is not None and review.requested_by_id != getattr(acting_user, "pk", None):
        raise refusals.attach(PublishPermissionDenied(_("Only the person who requested the review may ask again.")),
                              user=acting_user, entry=entry_of(review), attempted="resubmit")
    entry = entry_of(review)
    if entry is None:
        raise StaleReview(_("The %(kind)s of review #%(pk)s no longer exists.")
                          % {"kind": review.entry_kind, "pk": review.pk})
    locked = ReviewRequest.objects.select_for_update().get(pk=review.pk)
    if locked.status == ReviewStatus.PENDING and not staleness(locked, entry):
        raise InvalidEntry([_("Review #%(pk)s still asks for what the entry holds: it waits for a decision, "
                              "nothing to ask again.") % {"pk": locked.pk}])
    if locked.status not in (ReviewStatus.PENDING, ReviewStatus.FAILED):
        raise ReviewClosed(_("Review #%(pk)s was already %(status)s.")
                           % {"pk": locked.pk, "status": str(locked.get_status_display()).lower()})
    again = request_publication(entry, acting_user=acting_user, note=locked.note, label=locked.label,
                                version_number=locked.version_number, percent=locked.percent, previous=locked)
    if locked.status == ReviewStatus.PENDING:
        _close(locked, ReviewStatus.SUPERSEDED, acting_user, f"Asked again as review #{again.pk}.")
        write_audit(entry=entry, action=AuditAction.REVIEW_SUPERSEDED, acting_user=acting_user, label=locked.label,
                    from_version=locked.base_version, to_version=locked.version_number, review=locked,
                    note=f"Review #{locked.pk} by {locked.requested_by_name} ({locked.what}) superseded: asked again "
                         f"as review #{again.pk}.")
    return again


def _decide_checks(review: ReviewRequest, acting_user: User, verb: str) -> VersionedEntry:
    entry = entry_of(review)
    if entry is None:
        raise StaleReview(_("The %(kind)s of review #%(pk)s no longer exists.")
                          % {"kind": review.entry_kind, "pk": review.pk})
    services.require_publisher(acting_user, entry)
    if acting_user is not None and review.requested_by_id is not None and review.requested_by_id == acting_user.pk:
        if verb == "approve":
            text = _("You filed review #%(pk)s: another publisher must approve it (four eyes).")
        else:
            text = _("You filed review #%(pk)s: another publisher must reject it (four eyes). Withdraw it instead.")
        raise refusals.attach(SelfApproval(text % {"pk": review.pk}), user=acting_user, entry=entry,
                              attempted="approve_own" if verb == "approve" else "reject_own")
    return entry


def _lock_pending(review: ReviewRequest) -> ReviewRequest:
    locked = ReviewRequest.objects.select_for_update().get(pk=review.pk)
    if not locked.is_pending:
        raise ReviewClosed(_("Review #%(pk)s was already %(status)s.")
                           % {"pk": locked.pk, "status": str(locked.get_status_display()).lower()})
    return locked


def _close(review: ReviewRequest, status: str, acting_user: User, comment: str) -> None:
    review.status = status
    review.decided_by = user_row(acting_user)
    review.decided_by_name = actor_name(acting_user)
    review.decision_comment = comment
    review.decided_at = timezone.now()
    review.save()


def _aware(when: datetime) -> datetime:
    return timezone.make_aware(when) if timezone.is_naive(when) else when


@service_transaction
def approve(review: ReviewRequest, *, acting_user: User, comment: str = "",
            go_live_at: datetime | None = None) -> ReviewRequest:
    """Do what the request asked (publish the draft / move the label / start the rollout) and close it;
    with `go_live_at`, approve it now and schedule that for then (`registry_worker` carries it out)."""
    comment = (comment or "").strip()
    entry = _decide_checks(review, acting_user, "approve")
    entry = services._lock(entry)  # serialises concurrent approvals and publishes of this entry
    locked = _lock_pending(review)
    stale = staleness(locked, entry)
    if stale:
        raise StaleReview(stale)
    if go_live_at is not None:
        go_live_at = _aware(go_live_at)
        if go_live_at <= timezone.now():
            raise InvalidEntry([_("The go-live time %(when)s has passed: choose a later one, or approve without one "
                                  "to release now.") % {"when": f"{timezone.localtime(go_live_at):%Y-%m-%d %H:%M %Z}"}])
    if go_live_at is not None:  # released later by the worker: judge now what it would serve, as a release now is
        unfillable = argument_guard.release_refusal(entry, locked.label, _asked_version(locked, entry))
        if unfillable:
            raise InvalidEntry(unfillable)
    current = _label_version(entry, locked.label)
    when = f" to go live at {go_live_at:%Y-%m-%d %H:%M:%S %Z}" if go_live_at is not None else ""
    write_audit(
        entry=entry, action=AuditAction.REVIEW_APPROVED, acting_user=acting_user, label=locked.label,
        note=f"Approved review #{locked.pk} by {locked.requested_by_name} ({locked.what}){when}"
             + (f": {comment}" if comment else ""),
        from_version=current, to_version=locked.version_number, review=locked,
    )
    if go_live_at is not None:
        ScheduledRelease.objects.create(review=locked, go_live_at=go_live_at, scheduled_by=user_row(acting_user),
                                        scheduled_by_name=actor_name(acting_user))
        _close(locked, ReviewStatus.SCHEDULED, acting_user, comment)
        return locked
    locked.result_version = carry_out(locked, entry, acting_user=acting_user)
    _close(locked, ReviewStatus.APPROVED, acting_user, comment)
    return locked


def _next_number(entry: VersionedEntry) -> int:
    latest = services.latest_version(entry)
    return latest.number + 1 if latest is not None else 1


def _asked_version(review: ReviewRequest, entry: VersionedEntry) -> Any:
    """The version `review` asks to serve: the one it names, or the draft it stored."""
    if review.version_number is not None:
        version = entry.versions.filter(number=review.version_number).first()
        if version is not None:
            return version
    return argument_guard.Candidate.of_draft(_next_number(entry), review.snapshot or {})


def carry_out(locked: ReviewRequest, entry: VersionedEntry, *, acting_user: User, actor: str | None = None,
              approver: str | None = None) -> int:
    """Do what approved request `locked` asks, in the caller's transaction with the entry locked and
    `staleness` checked: publish the draft (the requester is its author) / move the label / start
    the rollout, as `acting_user` (named `actor` in the audit rows). Returns the version served."""
    from registry.release import rollouts  # rollouts imports reviews' neighbours; keep the import graph flat

    requester = locked.requested_by
    note = approval_note(locked.note, locked.requested_by_name, approver or actor_name(acting_user), locked.pk)
    version_number = locked.version_number
    if version_number is None:
        latest = services.latest_version(entry)
        if latest is not None and latest.content_hash == locked.content_hash:
            version_number = latest.number  # someone published this very draft meanwhile: serve that version
    with services.approved_move(entry, locked.label, reference=f"review #{locked.pk}"):
        if version_number is None:
            labels = [locked.label] if locked.percent is None else []
            version = services.publish(entry, acting_user=acting_user, actor=actor, note=note, labels=labels,
                                       on_behalf_of=requester if requester is not None else acting_user)
            number = version.number
        else:
            number = version_number
            if locked.percent is None:
                services.move_label(entry, label=locked.label, version_number=number, acting_user=acting_user,
                                    actor=actor, note=note)
        if locked.percent is not None:
            rollouts.set_rollout(entry, label=locked.label, version_number=number, percent=locked.percent,
                                 acting_user=acting_user, actor=actor, note=note)
    return number


@service_transaction
def reject(review: ReviewRequest, *, acting_user: User, comment: str) -> ReviewRequest:
    """Close the request without changing anything; the comment tells the requester why."""
    comment = (comment or "").strip()
    if not comment:
        raise InvalidEntry([_("Say why you reject the request: a comment is required.")])
    entry = _decide_checks(review, acting_user, "reject")
    locked = _lock_pending(review)
    _close(locked, ReviewStatus.REJECTED, acting_user, comment)
    write_audit(entry=entry, action=AuditAction.REVIEW_REJECTED, acting_user=acting_user,
                label=locked.label, note=f"Rejected review #{locked.pk} ({locked.what}): {comment}",
                from_version=locked.base_version, to_version=locked.version_number, review=locked)
    return locked


@service_transaction
def withdraw(review: ReviewRequest, *, acting_user: User) -> ReviewRequest:
    """The requester takes their own pending request back."""
    if acting_user is not None and review.requested_by_id != getattr(acting_user, "pk", None):
        raise refusals.attach(PublishPermissionDenied(_("Only the person who requested the review may withdraw it.")),
                              user=acting_user, entry=entry_of(review), attempted="withdraw")
    locked = _lock_pending(review)
    entry = entry_of(locked)
    _close(locked, ReviewStatus.WITHDRAWN, acting_user, "")
    if entry is not None:
        write_audit(entry=entry, action=AuditAction.REVIEW_WITHDRAWN, acting_user=acting_user,
                    label=locked.label, note=f"Withdrew review #{locked.pk} ({locked.what})",
                    from_version=locked.base_version, to_version=locked.version_number, review=locked)
    return locked
