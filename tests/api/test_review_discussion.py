"""The REST API of review discussion and scheduled releases: comments, request changes, go_live_at, list, cancel."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from registry.models import AuditEntry, ReviewRequest
from registry.release import schedules
from tests.api.conftest import client_for
from tests.factories import make_prompt, make_user, release

pytestmark = pytest.mark.django_db


def filed(as_editor) -> int:
    prompt = make_prompt("api-talk")
    release(prompt)
    answer = as_editor.patch(f"/api/v1/prompts/{prompt.name}/", {"description": "new"}, format="json")
    assert answer.status_code == 200, answer.json()
    answer = as_editor.post("/api/v1/reviews/", {"kind": "prompt", "key": prompt.name, "note": "please"},
                            format="json")
    assert answer.status_code == 201, answer.json()
    return answer.json()["id"]


def test_a_reviewer_asks_for_changes_and_the_requester_replies_in_the_comments(as_editor, as_publisher):
    pk = filed(as_editor)
    asked = as_publisher.post(f"/api/v1/reviews/{pk}/request-changes/", {"comment": "Shorter"}, format="json")
    assert asked.status_code == 200 and asked.json()["status"] == "pending" and asked.json()["changes_requested_at"]
    reply = as_editor.post(f"/api/v1/reviews/{pk}/comments/", {"text": "Shortened"}, format="json")
    assert reply.status_code == 201 and reply.json()["author_name"]
    listed = as_publisher.get(f"/api/v1/reviews/{pk}/comments/").json()
    assert [(c["kind"], c["text"]) for c in listed] == [("changes", "Shorter"), ("comment", "Shortened")]
    assert as_editor.post(f"/api/v1/reviews/{pk}/comments/", {"text": ""}, format="json").status_code == 400
    outsider = client_for(make_user("Editors"))
    assert outsider.post(f"/api/v1/reviews/{pk}/comments/", {"text": "hi"}, format="json").status_code == 403
    assert AuditEntry.objects.filter(action__in=["changes_requested", "review_commented"]).count() == 2


def test_approve_with_go_live_at_lists_the_release_and_it_can_be_cancelled(as_editor, as_publisher):
    pk = filed(as_editor)
    when = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    answer = as_publisher.post(f"/api/v1/reviews/{pk}/approve/", {"go_live_at": when.isoformat()}, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json()["status"] == "scheduled"
    assert answer.json()["go_live_at"].startswith(when.strftime("%Y-%m-%dT%H:%M"))
    [row] = as_editor.get("/api/v1/scheduled-releases/").json()["results"]
    assert (row["review"], row["status"], row["label"]) == (pk, "scheduled", "production")
    cancelled = as_editor.post(f"/api/v1/scheduled-releases/{row['id']}/cancel/", {"reason": "not yet"},
                               format="json")
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert ReviewRequest.objects.get(pk=pk).status == "pending"
    assert as_editor.post(f"/api/v1/scheduled-releases/{row['id']}/cancel/", {}, format="json").status_code == 409
    assert as_editor.get("/api/v1/scheduled-releases/?status=cancelled").json()["count"] == 1
    assert schedules.run_due(now=when) == []


def test_a_go_live_time_in_the_past_is_a_400(as_editor, as_publisher):
    pk = filed(as_editor)
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    answer = as_publisher.post(f"/api/v1/reviews/{pk}/approve/", {"go_live_at": past}, format="json")
    assert answer.status_code == 400 and "has passed" in str(answer.json())


def test_a_stale_request_is_asked_again_with_the_current_draft(as_editor, as_publisher):
    pk = filed(as_editor)
    as_editor.patch("/api/v1/prompts/api-talk/", {"description": "newer"}, format="json")
    again = as_editor.post(f"/api/v1/reviews/{pk}/request-again/")
    assert again.status_code == 201 and again.json()["previous"] == pk
    assert ReviewRequest.objects.get(pk=pk).status == "superseded"


def _scheduled(as_editor, as_publisher) -> tuple[int, int]:
    pk = filed(as_editor)
    when = (timezone.now() + timedelta(hours=1)).replace(microsecond=0)
    assert as_publisher.post(f"/api/v1/reviews/{pk}/approve/", {"go_live_at": when.isoformat()},
                             format="json").status_code == 200
    [row] = as_editor.get("/api/v1/scheduled-releases/").json()["results"]
    return pk, row["id"]


def test_a_publisher_moves_a_scheduled_release_with_the_audit_of_the_admins_move(as_editor, as_publisher,
                                                                                 publisher):
    """Issue 22: the go-live time could be moved in the admin only."""
    pk, row_id = _scheduled(as_editor, as_publisher)
    later = (timezone.now() + timedelta(hours=3)).replace(microsecond=0)
    moved = as_publisher.patch(f"/api/v1/scheduled-releases/{row_id}/", {"go_live_at": later.isoformat()},
                               format="json")
    assert moved.status_code == 200, moved.json()
    assert moved.json()["go_live_at"].startswith(later.strftime("%Y-%m-%dT%H:%M"))
    assert moved.json()["status"] == "scheduled"
    assert as_publisher.get(f"/api/v1/reviews/{pk}/").json()["go_live_at"] == moved.json()["go_live_at"]
    audit = AuditEntry.objects.get(action="release_rescheduled")
    assert audit.actor_id == publisher.pk
    assert [c["field"] for c in audit.changes] == ["go_live_at"]
    assert schedules.run_due(now=later - timedelta(minutes=1)) == []  # not at the old time any more


def test_moving_a_scheduled_release_is_refused_to_the_requester_and_for_a_past_time(as_editor, as_publisher):
    _pk, row_id = _scheduled(as_editor, as_publisher)
    later = (timezone.now() + timedelta(hours=3)).isoformat()
    assert as_editor.patch(f"/api/v1/scheduled-releases/{row_id}/", {"go_live_at": later},
                           format="json").status_code == 403
    past = (timezone.now() - timedelta(minutes=1)).isoformat()
    answer = as_publisher.patch(f"/api/v1/scheduled-releases/{row_id}/", {"go_live_at": past}, format="json")
    assert answer.status_code == 400 and "has passed" in str(answer.json())
    assert as_publisher.patch(f"/api/v1/scheduled-releases/{row_id}/", {}, format="json").status_code == 400
    as_editor.post(f"/api/v1/scheduled-releases/{row_id}/cancel/", {}, format="json")
    assert as_publisher.patch(f"/api/v1/scheduled-releases/{row_id}/", {"go_live_at": later},
                              format="json").status_code == 409
    assert not AuditEntry.objects.filter(action="release_rescheduled").exists()
