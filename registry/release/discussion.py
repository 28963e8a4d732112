"""The discussion of a review request: comments, a reviewer's "request changes", the requester's replies.

Who may write: the requester and anyone who may decide the request (`reviews.can_decide`), while
it is open (waiting for a decision or for its go-live time). A reviewer who asks for changes
leaves the request open, with their reason as a comment; the editor is told, and their next
save of the draft makes the request stale as any change of the draft does (they then ask again,
`reviews.request_again`, and the discussion carries on on the new request). Every comment is
audited, and none is edited or deleted afterwards (registry.models.discussion).
"""

from __future__ import annotations

from django.utils import timezone
from django.utils.translation import gettext as _

from registry import refusals
from registry.audit import User, actor_name, user_row, write_audit
from registry.changes import service_transaction
from registry.errors import InvalidEntry, PublishPermissionDenied, ReviewClosed
from registry.models import AuditAction, CommentKind, ReviewComment, ReviewRequest, ReviewStatus
from registry.release import reviews

MAX_COMMENT_CHARS = 10_000
EARLIER_REQUESTS = 20  # how far back `discussion` follows requests asked again


def is_requester(user: User, review: ReviewRequest) -> bool:
    return user is not None and review.requested_by_id is not None and review.requested_by_id == user.pk


def can_comment(user: User, review: ReviewRequest) -> bool:
    """The requester, or anyone who may decide the request (while it is open)."""
    return review.is_open and (is_requester(user, review) or reviews.can_decide(user, review))


def _text(text: str) -> str:
    text = (text or "").strip()
    if not text:
        raise InvalidEntry([_("Write a comment first: it is empty.")])
    if len(text) > MAX_COMMENT_CHARS:
        raise InvalidEntry([_("A comment has at most %(count)s characters; this one has %(length)s.")
                            % {"count": MAX_COMMENT_CHARS, "length": len(text)}])
    return text


def _add(review: ReviewRequest, kind: str, text: str, acting_user: User, action: str, note: str) -> ReviewComment:
    comment = ReviewComment.objects.create(review=review, kind=kind, author=user_row(acting_user),
                                           author_name=actor_name(acting_user), text=text)
    write_audit(entry=reviews.entry_of(review), entry_kind=review.entry_kind, entry_key=review.entry_key,
                entry_id=review.entry_id, action=action, acting_user=acting_user, label=review.label,
                from_version=review.base_version, to_version=review.version_number, review=review,
                note=f"{note} #{review.pk} ({review.what}): {text}")
    return comment


def _locked_open(review: ReviewRequest) -> ReviewRequest:
    locked = ReviewRequest.objects.select_for_update().get(pk=review.pk)
    if not locked.is_open:
        raise ReviewClosed(_("Review #%(pk)s was already %(status)s: its discussion is closed.")
                           % {"pk": locked.pk, "status": str(locked.get_status_display()).lower()})
    return locked


@service_transaction
def comment(review: ReviewRequest, *, acting_user: User, text: str) -> ReviewComment:
    """Add a comment to the discussion of `review` (its requester or a publisher who may decide it)."""
    text = _text(text)
    locked = _locked_open(review)
    if not can_comment(acting_user, locked):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may not comment on review #%(pk)s: its requester and the publishers who may decide it "
              "can.") % {"user": actor_name(acting_user), "pk": locked.pk}),
            user=acting_user, entry=reviews.entry_of(locked), attempted="comment")
    return _add(locked, CommentKind.COMMENT, text, acting_user, AuditAction.REVIEW_COMMENTED, "Comment on review")


@service_transaction
def request_changes(review: ReviewRequest, *, acting_user: User, text: str) -> ReviewComment:
    """A reviewer asks for changes: the request stays open and the requester is told why."""
    text = _text(text)
    locked = _locked_open(review)
    if locked.status != ReviewStatus.PENDING:
        raise ReviewClosed(_("Review #%(pk)s is approved and scheduled: cancel the scheduled release first to ask "
                             "for changes.") % {"pk": locked.pk})
    if not reviews.can_decide(acting_user, locked):
        raise refusals.attach(PublishPermissionDenied(
            _("%(user)s may not ask for changes to review #%(pk)s: a publisher who may decide it can (not its "
              "requester).") % {"user": actor_name(acting_user), "pk": locked.pk}),
            user=acting_user, entry=reviews.entry_of(locked), attempted="ask_changes")
    locked.changes_requested_at = timezone.now()
    locked.save(update_fields=["changes_requested_at"])
    return _add(locked, CommentKind.CHANGES_REQUESTED, text, acting_user, AuditAction.CHANGES_REQUESTED,
                "Asked for changes to review")


def discussion(review: ReviewRequest) -> list[ReviewComment]:
    """The comments of `review` and of the earlier requests it asks again, oldest first."""
    ids, current = [review.pk], review
    while current.previous_id is not None and len(ids) < EARLIER_REQUESTS:
        earlier = ReviewRequest.objects.filter(pk=current.previous_id).first()
        if earlier is None or earlier.pk in ids:
            break
        ids.append(earlier.pk)
        current = earlier
    return list(ReviewComment.objects.filter(review_id__in=ids).order_by("created_at", "id"))
