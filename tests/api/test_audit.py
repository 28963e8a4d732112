"""The audit log and fetch statistics over the API."""

from __future__ import annotations

import csv
import io

import pytest
from django.utils import timezone

from registry.models import FetchCounter
from tests.factories import make_prompt, release

pytestmark = pytest.mark.django_db


def test_audit_list_filters(as_auditor, as_editor):
    make_prompt("alpha")
    as_editor.patch("/api/v1/prompts/alpha/", {"title": "A"}, format="json")
    release(make_prompt("beta"), labels=("staging",))
    results = as_auditor.get("/api/v1/audit/", {"action": "edit"}).json()["results"]
    assert [(r["action"], r["entry_key"]) for r in results] == [("edit", "alpha")]
    assert [r["entry_key"] for r in as_auditor.get("/api/v1/audit/", {"entry_key": "beta"}).json()["results"]]
    assert as_auditor.get("/api/v1/audit/", {"action": "nonsense"}).status_code == 400
    future = (timezone.now() + timezone.timedelta(days=1)).isoformat()
    assert as_auditor.get("/api/v1/audit/", {"since": future}).json()["count"] == 0


def test_editors_cannot_read_the_audit_log(as_editor):
    assert as_editor.get("/api/v1/audit/").status_code == 403


def test_audit_export_csv_defuses_formulas_and_json_counts(as_auditor, publisher):
    from registry.release import services

    prompt = make_prompt("alpha")
    services.set_archived(prompt, archived=True, acting_user=publisher, note="=HYPERLINK(\"x\")")
    response = as_auditor.get("/api/v1/audit/export/", {"as": "csv", "action": "archive"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [row["note"] for row in rows] == ["'=HYPERLINK(\"x\")"]
    as_json = as_auditor.get("/api/v1/audit/export/", {"as": "json"}).json()
    assert as_json["count"] == len(as_json["entries"]) >= 1


def test_publishers_cannot_export_the_audit_log(as_publisher):
    assert as_publisher.get("/api/v1/audit/export/").status_code == 403


def test_fetch_statistics_with_filters(as_auditor):
    now = timezone.now()
    for client, version in (("bot-a", 1), ("bot-b", 2), ("", 2)):
        FetchCounter.objects.create(client_name=client, entry_kind="prompt", entry_key="greet", version=version,
                                    label="production", count=3, first_at=now, last_at=now)
    assert as_auditor.get("/api/v1/fetches/").json()["count"] == 3
    results = as_auditor.get("/api/v1/fetches/", {"version": 2, "entry_key": "greet"}).json()["results"]
    assert sorted(r["client"] for r in results) == ["", "bot-b"]
    anonymous = as_auditor.get("/api/v1/fetches/", {"client": ""}).json()["results"]
    assert [r["client"] for r in anonymous] == [""]
