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
