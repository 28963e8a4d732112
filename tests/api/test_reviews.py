"""Four eyes through the API: an editor requests, another publisher approves or rejects."""

from __future__ import annotations

import pytest

from registry.models import AuditEntry, Prompt
from tests.factories import make_prompt, release

pytestmark = pytest.mark.django_db


def request_review(client, **overrides):
    payload = {"kind": "prompt", "key": "greet", "label": "production", "note": "Ready for prod", **overrides}
    return client.post("/api/v1/reviews/", payload, format="json")


def test_editor_requests_and_another_publisher_approves_which_moves_production(as_editor, as_publisher):
    make_prompt("greet")
    response = request_review(as_editor)
    assert response.status_code == 201, response.json()
    review = response.json()
    assert (review["status"], review["label"], review["version_number"]) == ("pending", "production", None)

    approved = as_publisher.post(f"/api/v1/reviews/{review['id']}/approve/", {"comment": "LGTM"}, format="json")
    assert approved.status_code == 200, approved.json()
    assert approved.json()["status"] == "approved" and approved.json()["result_version"] == 1
    labels = as_publisher.get("/api/v1/prompts/greet/labels/").json()
    assert [(label["name"], label["version"], label["protected"]) for label in labels] == [("production", 1, True)]
    actions = set(AuditEntry.objects.filter(entry_key="greet").values_list("action", flat=True))
    assert {"review_requested", "review_approved", "publish", "label_move"} <= actions


def test_self_approval_is_refused(as_publisher):
    make_prompt("greet")
    review = request_review(as_publisher).json()
    response = as_publisher.post(f"/api/v1/reviews/{review['id']}/approve/", {}, format="json")
    assert response.status_code == 403
    assert "four eyes" in response.json()["detail"]
    assert not Prompt.objects.get(name="greet").versions.exists()


def test_an_editor_cannot_approve(as_editor, as_publisher):
    make_prompt("greet")
    review = request_review(as_publisher).json()
    assert as_editor.post(f"/api/v1/reviews/{review['id']}/approve/", {}, format="json").status_code == 403


def test_a_stale_request_cannot_be_approved(as_editor, as_publisher):
    prompt = make_prompt("greet")
    review = request_review(as_editor).json()
    prompt.description = "changed after the request"
    prompt.save()
    response = as_publisher.post(f"/api/v1/reviews/{review['id']}/approve/", {}, format="json")
    assert response.status_code == 409
    assert "stale" in response.json()["detail"]


def test_reject_needs_a_comment_and_closes_the_request(as_editor, as_publisher):
    make_prompt("greet")
    review = request_review(as_editor).json()
    assert as_publisher.post(f"/api/v1/reviews/{review['id']}/reject/", {}, format="json").status_code == 400
    response = as_publisher.post(f"/api/v1/reviews/{review['id']}/reject/", {"comment": "Typo in line 2"},
                                 format="json")
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    again = as_publisher.post(f"/api/v1/reviews/{review['id']}/approve/", {}, format="json")
    assert again.status_code == 409


def test_requester_withdraws(as_editor, as_publisher):
    make_prompt("greet")
    review = request_review(as_editor).json()
    assert as_publisher.post(f"/api/v1/reviews/{review['id']}/withdraw/", format="json").status_code == 403
    response = as_editor.post(f"/api/v1/reviews/{review['id']}/withdraw/", format="json")
    assert response.status_code == 200 and response.json()["status"] == "withdrawn"


def test_request_for_an_existing_version(as_editor, as_publisher):
    prompt = make_prompt("greet")
    release(prompt, labels=("staging",))
    review = request_review(as_editor, version=1).json()
    assert review["version_number"] == 1
    response = as_publisher.post(f"/api/v1/reviews/{review['id']}/approve/", {}, format="json")
    assert response.status_code == 200, response.json()


@pytest.mark.parametrize("payload, field", [
    ({"kind": "widget"}, "kind"),
    ({"key": "no-such-prompt"}, "key"),
    ({"note": ""}, "note"),
    ({"label": "Not A Label"}, "label"),
    ({"percent": 150}, "percent"),
])
def test_malformed_review_requests_are_400(as_editor, payload, field):
    make_prompt("greet")
    response = request_review(as_editor, **payload)
    assert response.status_code == 400
    assert field in response.json()


def test_review_queue_filters_by_status(as_editor, as_auditor):
    make_prompt("greet")
    make_prompt("other")
    request_review(as_editor)
    request_review(as_editor, key="other")
    results = as_auditor.get("/api/v1/reviews/", {"status": "pending", "key": "other"}).json()["results"]
    assert [r["entry_key"] for r in results] == ["other"]


def test_a_request_for_a_label_nobody_uses_is_refused_unless_confirmed_new(as_editor):
    make_prompt("greet")
    refused = request_review(as_editor, label="prodution")
    assert refused.status_code == 400, refused.json()
    assert "Did you mean 'production'?" in str(refused.json())
    assert request_review(as_editor, label="nightly").status_code == 400
    filed = request_review(as_editor, label="nightly", new_label=True)
    assert filed.status_code == 201, filed.json()
    assert filed.json()["label"] == "nightly"
    assert request_review(as_editor, label="staging").status_code == 201


def test_the_review_queue_reads_a_page_in_the_same_queries_for_3_rows_as_for_15(as_editor, as_auditor):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    def queries_for(count: int, start: int) -> int:
        for i in range(start, start + count):
            make_prompt(f"entry-{i}")
            assert request_review(as_editor, key=f"entry-{i}").status_code == 201
        with CaptureQueriesContext(connection) as seen:
            assert len(as_auditor.get("/api/v1/reviews/", {"page_size": 50}).json()["results"]) == start + count
        return len(seen.captured_queries)

    assert queries_for(3, 0) == queries_for(12, 3)


def test_the_review_queue_shows_each_scheduled_requests_go_live_time(as_editor, as_publisher, as_auditor):
    from datetime import timedelta

    from django.utils import timezone

    make_prompt("greet")
    make_prompt("other")
    scheduled, waiting = request_review(as_editor).json(), request_review(as_editor, key="other").json()
    when = (timezone.now() + timedelta(hours=2)).replace(microsecond=0)
    approved = as_publisher.post(f"/api/v1/reviews/{scheduled['id']}/approve/",
                                 {"comment": "at two", "go_live_at": when.isoformat()}, format="json")
    assert approved.status_code == 200, approved.content
    listed = {r["id"]: r["go_live_at"] for r in as_auditor.get("/api/v1/reviews/").json()["results"]}
    assert listed[waiting["id"]] is None
    assert listed[scheduled["id"]] is not None and listed[scheduled["id"]].startswith(
        timezone.localtime(when).strftime("%Y-%m-%dT%H:%M:%S"))
