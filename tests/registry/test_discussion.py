"""Review discussion: comments, request changes, replies, going stale, asking again; one rule for who decides."""

from __future__ import annotations

import pytest

from registry.authoring import drafts
from registry.errors import ImmutableVersionError, InvalidEntry, PublishPermissionDenied, ReviewClosed
from registry.models import AuditEntry, ReviewComment, ReviewStatus
from registry.release import discussion, reviews, services
from tests.factories import make_prompt, make_user, release

pytestmark = pytest.mark.django_db


def requested(editor, **fields):
    prompt = make_prompt(**fields)
    release(prompt)
    save(prompt, editor, "A better description")
    return prompt, reviews.request_publication(prompt, acting_user=editor, note="Please release")


def save(prompt, user, description: str) -> None:
    data = drafts.draft_data(prompt)
    data["description"] = description
    drafts.save_draft(prompt, data, acting_user=user)


def audit_actions(review) -> list[str]:
    return list(AuditEntry.objects.filter(entry_id=review.entry_id, action__in=[
        "review_commented", "changes_requested", "review_stale", "review_superseded"]).order_by("id")
        .values_list("action", flat=True))


def test_a_reviewer_asks_for_changes_the_request_stays_open_and_the_requester_replies(editor, publisher):
    _prompt, review = requested(editor)
    asked = discussion.request_changes(review, acting_user=publisher, text="Say 'customer', not 'user'.")
    review.refresh_from_db()
    assert review.status == ReviewStatus.PENDING and review.changes_requested_at is not None
    reply = discussion.comment(review, acting_user=editor, text="Done, asking again.")
    assert [(c.kind, c.author_name, c.text) for c in discussion.discussion(review)] == [
        ("changes", publisher.username, "Say 'customer', not 'user'."), ("comment", editor.username, reply.text)]
    assert audit_actions(review) == ["changes_requested", "review_commented"]
    row = AuditEntry.objects.get(action="review_commented")
    assert row.actor == editor and "Done, asking again." in row.note and asked.author == publisher


def test_only_the_requester_and_those_who_may_decide_comment(editor, publisher, auditor):
    _prompt, review = requested(editor)
    other_editor = make_user("Editors")
    for outsider in (other_editor, auditor):
        with pytest.raises(PublishPermissionDenied):
            discussion.comment(review, acting_user=outsider, text="me too")
    with pytest.raises(PublishPermissionDenied):  # the requester does not ask herself for changes
        discussion.request_changes(review, acting_user=editor, text="hmm")
    with pytest.raises(InvalidEntry):
        discussion.comment(review, acting_user=publisher, text="   ")
    assert ReviewComment.objects.count() == 0 and audit_actions(review) == []


def test_comments_are_never_edited_or_deleted(editor, publisher):
    _prompt, review = requested(editor)
    comment = discussion.comment(review, acting_user=publisher, text="Looks fine")
    comment.text = "Looks awful"
    with pytest.raises(ImmutableVersionError):
        comment.save()
    with pytest.raises(ImmutableVersionError):
        comment.delete()
    with pytest.raises(ImmutableVersionError):
        ReviewComment.objects.update(text="rewritten")
    with pytest.raises(ImmutableVersionError):
        ReviewComment.objects.all().delete()
    with pytest.raises(ImmutableVersionError):  # an upsert would overwrite the stored row in the database
        ReviewComment.objects.bulk_create([comment], update_conflicts=True, unique_fields=["id"],
                                          update_fields=["text"])
    assert ReviewComment.objects.get().text == "Looks fine"


def test_a_closed_request_takes_no_more_comments(editor, publisher):
    _prompt, review = requested(editor)
    reviews.reject(review, acting_user=publisher, comment="Not now")
    with pytest.raises(ReviewClosed):
        discussion.comment(review, acting_user=editor, text="Why?")


def test_the_next_draft_save_makes_the_request_stale_once_and_asking_again_carries_the_discussion(editor, publisher):
    prompt, review = requested(editor)
    discussion.request_changes(review, acting_user=publisher, text="Shorter, please")
    save(prompt, editor, "Shorter")
    save(prompt, editor, "Shorter still")  # already stale: no second notice
    review.refresh_from_db()
    assert review.status == ReviewStatus.PENDING and review.went_stale_at is not None
    assert audit_actions(review) == ["changes_requested", "review_stale"]
    stale_row = AuditEntry.objects.get(action="review_stale")
    assert "went stale" in stale_row.note and stale_row.actor is None
    again = reviews.request_again(review, acting_user=editor)
    review.refresh_from_db()
    assert review.status == ReviewStatus.SUPERSEDED and again.previous == review
    assert again.content_hash != review.content_hash and again.note == review.note
    discussion.comment(again, acting_user=editor, text="Shorter now")
    assert [c.text for c in discussion.discussion(again)] == ["Shorter, please", "Shorter now"]
    reviews.approve(again, acting_user=publisher)
    assert prompt.labels.get(name="production").version.snapshot["description"] == "Shorter still"


def test_a_request_that_still_matches_the_draft_cannot_be_asked_again(editor):
    _prompt, review = requested(editor)
    with pytest.raises(InvalidEntry):
        reviews.request_again(review, acting_user=editor)


def test_a_draft_changed_back_makes_no_new_stale_notice_and_approval_still_asks_the_one_rule(editor, publisher):
    prompt, review = requested(editor)
    save(prompt, editor, "Something else")
    save(prompt, editor, "A better description")  # back to what was asked
    assert reviews.staleness(review, prompt) == ""
    reviews.approve(review, acting_user=publisher)
    assert AuditEntry.objects.filter(action="review_stale").count() == 1


def test_deciders_of_a_request_are_exactly_those_can_decide_admits(editor, publisher, second_publisher, auditor,
                                                                    superuser):
    from django.contrib.auth import get_user_model

    _prompt, review = requested(editor)
    inactive = make_user("Publishers")
    inactive.is_active = False
    inactive.save()
    everyone = list(get_user_model().objects.order_by("pk"))
    assert reviews.deciders_of(review) == [user for user in everyone if reviews.can_decide(user, review)]
    assert set(reviews.deciders_of(review)) == {publisher, second_publisher, superuser}
    assert editor not in reviews.deciders_of(review)
    filed_by_publisher = reviews.request_publication(_prompt, acting_user=publisher, note="mine", label="canary")
    assert publisher not in reviews.deciders_of(filed_by_publisher)


def test_publishers_of_an_entry_follow_can_publish(editor, publisher, superuser):
    prompt = make_prompt()
    from django.contrib.auth import get_user_model

    assert services.publishers_of(prompt) == [u for u in get_user_model().objects.order_by("pk")
                                              if services.can_publish(u, prompt)]


def test_staleness_is_the_one_rule_of_approval_badges_and_the_review_page(editor, publisher, admin_client):
    """The label moving and the draft changing make a request stale wherever it is asked."""
    from registry.admin.badges import entry_badges
    from registry.errors import StaleReview

    prompt, review = requested(editor)
    save(prompt, editor, "Changed after the request")
    reason = reviews.staleness(review, prompt)
    assert "draft" in reason
    assert any(b.tone == "stale" for b in entry_badges(prompt))
    page = admin_client.get(f"/admin/registry/reviewrequest/{review.pk}/change/")
    assert reason in page.content.decode()
    with pytest.raises(StaleReview, match="draft"):
        reviews.approve(review, acting_user=publisher)
    moved = reviews.staleness(review, prompt, label_versions={"production": 9})
    assert "'production' served v1 when it was requested and serves v9 now" in moved
