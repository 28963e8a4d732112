"""Two people (or CI jobs) editing one draft at once: nobody silently reverts anybody."""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection

from api.entries import EntryViewSet
from registry.models import AuditEntry, Prompt
from tests.api.conftest import client_for
from tests.factories import make_prompt, make_user

pytestmark = pytest.mark.django_db


def test_reads_and_writes_answer_with_the_draft_revision_as_etag(as_editor):
    prompt = make_prompt("greet")
    read = as_editor.get("/api/v1/prompts/greet/")
    assert read.headers["ETag"] == f'"{prompt.revision}"'
    written = as_editor.patch("/api/v1/prompts/greet/", {"title": "Hello"}, format="json")
    assert written.status_code == 200
    assert written.headers["ETag"] == f'"{prompt.revision + 1}"'


def test_a_write_based_on_an_older_revision_is_refused_with_412_and_saves_nothing(as_editor, publisher):
    make_prompt("greet")
    etag = as_editor.get("/api/v1/prompts/greet/").headers["ETag"]
    other = client_for(publisher).patch("/api/v1/prompts/greet/", {"description": "Theirs"}, format="json",
                                        HTTP_IF_MATCH=etag)
    assert other.status_code == 200
    mine = as_editor.patch("/api/v1/prompts/greet/", {"title": "Mine"}, format="json", HTTP_IF_MATCH=etag)
    assert mine.status_code == 412, mine.json()
    body = mine.json()
    assert body["code"] == "draft_conflict" and publisher.username in body["detail"]
    assert mine.headers["ETag"] == f'"{body["current_revision"]}"'
    prompt = Prompt.objects.get(name="greet")
    assert (prompt.title, prompt.description) == ("", "Theirs")
    retry = as_editor.patch("/api/v1/prompts/greet/", {"title": "Mine"}, format="json",
                            HTTP_IF_MATCH=mine.headers["ETag"])
    assert retry.status_code == 200
    prompt.refresh_from_db()
    assert (prompt.title, prompt.description) == ("Mine", "Theirs")


def test_an_unreadable_if_match_is_a_400(as_editor):
    make_prompt("greet")
    response = as_editor.patch("/api/v1/prompts/greet/", {"title": "x"}, format="json", HTTP_IF_MATCH="yesterday")
    assert response.status_code == 400 and "If-Match" in response.json()


def test_a_patch_applies_to_the_current_row_not_to_a_copy_read_before(as_editor, monkeypatch):
    """The lost update: the instance a request loaded goes stale while another write commits; the
    PATCH of one field must not write back the other field's old value, and the audit's "before"
    must be the row as it was when locked."""
    prompt = make_prompt("greet")
    stale = Prompt.objects.get(pk=prompt.pk)
    prompt.description = "Written meanwhile"
    prompt.save()
    monkeypatch.setattr(EntryViewSet, "get_object", lambda self: stale)

    response = as_editor.patch("/api/v1/prompts/greet/", {"title": "New title"}, format="json")

    assert response.status_code == 200, response.json()
    prompt.refresh_from_db()
    assert (prompt.title, prompt.description) == ("New title", "Written meanwhile")
    edit = AuditEntry.objects.filter(entry_key="greet", action="edit").latest("id")
    assert edit.changes == [{"field": "title", "before": None, "after": "New title"}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql" and not os.environ.get("FORCE_THREADS"),
                    reason="real concurrent writers need PostgreSQL (make test runs this file on it)")
def test_concurrent_patches_of_different_fields_both_survive():
    editor, other = make_user("Editors"), make_user("Editors")
    for round_ in range(10):
        name = f"race-{round_}"
        make_prompt(name)
        barrier = threading.Barrier(2)
        results: list[int] = []

        def patch(user, field, value):
            barrier.wait()
            response = client_for(user).patch(f"/api/v1/prompts/{name}/", {field: value}, format="json")
            results.append(response.status_code)
            connection.close()

        threads = [threading.Thread(target=patch, args=(editor, "title", "T")),
                   threading.Thread(target=patch, args=(other, "description", "D"))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert results == [200, 200]
        prompt = Prompt.objects.get(name=name)
        assert (prompt.title, prompt.description) == ("T", "D"), f"round {round_}"
