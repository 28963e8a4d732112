"""The review page's discussion and scheduling, the preferences page's e-mail kinds, and where the admin
shows what is scheduled (home page, history, badges)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from registry.authoring import drafts
from registry.models import EditorPreference, MailKind, ReviewComment, ReviewRequest, ReviewStatus, ScheduleStatus
from registry.release import reviews
from tests.factories import make_prompt, make_user, release

pytestmark = pytest.mark.django_db


def filed(editor):
    prompt = make_prompt("page-talk")
    release(prompt)
    data = drafts.draft_data(prompt)
    data["description"] = "Better"
    drafts.save_draft(prompt, data, acting_user=editor)
    return prompt, reviews.request_publication(prompt, acting_user=editor, note="Please")


def page_of(review) -> str:
    return f"/admin/registry/reviewrequest/{review.pk}/change/"


def test_a_publisher_asks_for_changes_and_the_requester_replies_on_the_review_page(client, editor, publisher):
    _prompt, review = filed(editor)
    client.force_login(publisher)
    answer = client.post(page_of(review), {"decision": "changes", "comment": "Say <em>please</em>"}, follow=True)
    assert "Asked for changes" in answer.content.decode()
    client.force_login(editor)
    body = client.get(page_of(review)).content.decode()
    assert "Say &lt;em&gt;please&lt;/em&gt;" in body and "asks for changes" in body  # shown as text
    client.post(page_of(review), {"decision": "comment", "comment": "Added it"})
    assert list(ReviewComment.objects.values_list("kind", "text")) == [
        ("changes", "Say <em>please</em>"), ("comment", "Added it")]
    assert client.post(page_of(review), {"decision": "changes", "comment": "x"}).status_code == 200  # refused
    assert ReviewComment.objects.count() == 2


def test_an_empty_comment_is_refused_at_the_field(client, editor, publisher):
    _prompt, review = filed(editor)
    client.force_login(publisher)
    body = client.post(page_of(review), {"decision": "comment", "comment": " "}).content.decode()
    assert "Write a comment first" in body and not ReviewComment.objects.exists()


def test_approving_with_a_go_live_time_schedules_the_release_and_it_can_be_moved_and_cancelled(client, editor,
                                                                                            publisher):
    prompt, review = filed(editor)
    client.force_login(publisher)
    when = timezone.localtime(timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    client.post(page_of(review), {"decision": "schedule", "go_live_at": when.strftime("%Y-%m-%dT%H:%M:%S")})
    review.refresh_from_db()
    assert review.status == ReviewStatus.SCHEDULED and review.schedules.get().go_live_at == when
    body = client.get(page_of(review)).content.decode()
    assert "Goes live at" in body and "(UTC)" in body  # the zone is stated at the field
    later = when + timedelta(hours=1)
    client.post(page_of(review), {"decision": "reschedule", "go_live_at": later.strftime("%Y-%m-%dT%H:%M")})
    assert review.schedules.get().go_live_at == later.replace(second=0)
    home = client.get("/admin/").content.decode()
    assert 'id="registry-scheduled"' in home and prompt.name in home
    history = client.get(f"/admin/registry/prompt/{prompt.pk}/history/").content.decode()
    assert 'id="registry-history-scheduled"' in history
    change = client.get(f"/admin/registry/prompt/{prompt.pk}/change/").content.decode()
    assert "goes live on &#x27;production&#x27;" in change or "goes live on 'production'" in change
    client.post(page_of(review), {"decision": "cancel", "comment": "not this week"})
    assert review.schedules.get().status == ScheduleStatus.CANCELLED
    assert 'id="registry-scheduled"' not in client.get("/admin/").content.decode()


def test_a_schedule_without_a_time_or_in_the_past_is_refused(client, editor, publisher):
    _prompt, review = filed(editor)
    client.force_login(publisher)
    body = client.post(page_of(review), {"decision": "schedule"}).content.decode()
    assert "Choose when the release goes live." in body
    past = timezone.localtime(timezone.now() - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M")
    body = client.post(page_of(review), {"decision": "schedule", "go_live_at": past}).content.decode()
    assert "has passed" in body
    review.refresh_from_db()
    assert review.status == ReviewStatus.PENDING


def test_a_stale_request_offers_its_requester_to_ask_again(client, editor, publisher):
    prompt, review = filed(editor)
    data = drafts.draft_data(prompt)
    data["description"] = "Changed"
    drafts.save_draft(prompt, data, acting_user=editor)
    client.force_login(publisher)
    body = client.get(page_of(review)).content.decode()
    assert 'value="approve"' not in body and 'value="reject"' in body  # a stale request is not approvable
    client.force_login(editor)
    answer = client.post(page_of(review), {"decision": "again"})
    again = ReviewRequest.objects.get(previous=review)
    assert answer.status_code == 302 and answer["Location"] == page_of(again)


def test_the_preferences_page_turns_kinds_of_email_off_and_on(client):
    user = make_user("Publishers", email="@")
    client.force_login(user)
    body = client.get("/admin/language/").content.decode()
    assert 'id="registry-mail-preferences"' in body and user.email in body
    wanted = [kind for kind in MailKind.values if kind != MailKind.COMMENTS]
    client.post("/admin/language/", {"language": "de", "mail": wanted})
    assert EditorPreference.objects.get(user=user).mail_off == [MailKind.COMMENTS]
    client.post("/admin/language/", {"language": "de", "mail": MailKind.values})
    assert EditorPreference.objects.get(user=user).mail_off == []
