"""Two people (or CI jobs) editing one draft at once: nobody silently reverts anybody."""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection

from api.entries import EntryViewSet
from registry.models import AuditEntry, Prompt, PromptMessage, Rollout
from tests.api.conftest import client_for
from tests.factories import make_prompt, make_user, release

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

        def patch(user, field, value, *, barrier=barrier, name=name, results=results):
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


# ----------------------------------------------------------------------------- rollouts

def _prompt_with_versions(name: str, count: int = 3):
    """`name` with `count` published versions; staging serves v1."""
    prompt = make_prompt(name)
    release(prompt, note="v1", labels=("staging",))
    for number in range(2, count + 1):
        PromptMessage.objects.filter(prompt=prompt).update(text=f"Take {number} on {{{{ topic }}}}.")
        release(prompt, note=f"v{number}", labels=())
    return prompt


def _put(client, name: str, version: int, percent: int, **headers):
    return client.put(f"/api/v1/prompts/{name}/rollouts/staging/", {"version": version, "percent": percent},
                      format="json", **headers)


def test_rollout_reads_and_writes_answer_with_an_etag(as_publisher):
    _prompt_with_versions("greet")
    started = _put(as_publisher, "greet", 2, 10)
    assert started.status_code == 200 and started.headers["ETag"] == f'"{started.json()["etag"]}"'
    read = as_publisher.get("/api/v1/prompts/greet/rollouts/staging/")
    assert read.headers["ETag"] == started.headers["ETag"]
    assert as_publisher.get("/api/v1/prompts/greet/rollouts/").json()[0]["etag"] == started.json()["etag"]
    raised = _put(as_publisher, "greet", 2, 20, HTTP_IF_MATCH=read.headers["ETag"])
    assert raised.status_code == 200 and raised.headers["ETag"] != read.headers["ETag"]


def test_a_rollout_change_based_on_an_old_state_is_refused_with_412_and_changes_nothing(as_publisher, publisher):
    _prompt_with_versions("greet")
    seen = _put(as_publisher, "greet", 2, 10).headers["ETag"]
    assert _put(client_for(make_user("Publishers")), "greet", 2, 50, HTTP_IF_MATCH=seen).status_code == 200
    stale = _put(as_publisher, "greet", 3, 20, HTTP_IF_MATCH=seen)
    assert stale.status_code == 412, stale.json()
    body = stale.json()
    assert body["code"] == "rollout_conflict" and "v2 is rolling out to 50%" in body["detail"]
    assert stale.headers["ETag"] == f'"{body["current_etag"]}"'
    rollout = Rollout.objects.get()
    assert (rollout.candidate_version, rollout.percent) == (2, 50)
    assert _put(as_publisher, "greet", 3, 20, HTTP_IF_MATCH=stale.headers["ETag"]).status_code == 200


def test_if_none_match_starts_a_rollout_only_when_none_runs(as_publisher):
    _prompt_with_versions("greet")
    assert _put(as_publisher, "greet", 2, 10, HTTP_IF_NONE_MATCH="*").status_code == 200
    second = _put(as_publisher, "greet", 3, 10, HTTP_IF_NONE_MATCH="*")
    assert second.status_code == 412 and second.json()["code"] == "rollout_conflict"
    assert Rollout.objects.get().candidate_version == 2


def test_a_put_without_if_match_may_not_replace_another_candidates_rollout(as_publisher):
    """The lost update: two publishers start different candidates without saying what they saw;
    the later one is refused (409) instead of silently replacing the earlier."""
    _prompt_with_versions("greet")
    assert _put(as_publisher, "greet", 2, 10).status_code == 200
    blind = _put(client_for(make_user("Publishers")), "greet", 3, 30)
    assert blind.status_code == 409, blind.json()
    assert blind.json()["code"] == "rollout_conflict" and "If-Match" in blind.json()["detail"]
    assert (Rollout.objects.get().candidate_version, Rollout.objects.get().percent) == (2, 10)
    # The same candidate's share, an abort and an informed replacement still go through.
    assert _put(as_publisher, "greet", 2, 25).status_code == 200
    etag = as_publisher.get("/api/v1/prompts/greet/rollouts/staging/").headers["ETag"]
    assert _put(as_publisher, "greet", 3, 30, HTTP_IF_MATCH=etag).status_code == 200


def test_a_candidate_switch_is_audited_with_the_candidate_before_and_after(as_publisher):
    _prompt_with_versions("greet")
    _put(as_publisher, "greet", 2, 10)
    etag = as_publisher.get("/api/v1/prompts/greet/rollouts/staging/").headers["ETag"]
    _put(as_publisher, "greet", 3, 10, HTTP_IF_MATCH=etag)
    switch = AuditEntry.objects.filter(action="rollout_changed").latest("id")
    assert switch.changes == [{"field": "candidate_version", "before": 2, "after": 3}]
    assert as_publisher.put("/api/v1/prompts/greet/rollouts/staging/", {"version": 3, "percent": 0},
                            format="json").status_code == 204
    ended = AuditEntry.objects.filter(action="rollout_changed").latest("id")
    assert ended.changes == [{"field": "candidate_version", "before": 3, "after": None},
                             {"field": "percent", "before": 10, "after": 0}]


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql" and not os.environ.get("FORCE_THREADS"),
                    reason="real concurrent writers need PostgreSQL (make test runs this file on it)")
@pytest.mark.parametrize("precondition", ["same If-Match", "none"])
def test_two_concurrent_rollout_puts_on_one_label_one_applies_and_the_other_is_refused(precondition):
    """Two publishers change one label's rollout at the same moment: both from the state they
    read (If-Match), or both starting a different candidate without saying what they saw. One
    applies; the other is refused (412 / 409) and the row holds what the one that applied asked."""
    alice, bob = make_user("Publishers"), make_user("Publishers")
    for round_ in range(8):
        name = f"race-{round_}"
        _prompt_with_versions(name)
        headers = {}
        if precondition == "same If-Match":
            assert _put(client_for(alice), name, 2, 10).status_code == 200
            headers = {"HTTP_IF_MATCH": client_for(alice).get(f"/api/v1/prompts/{name}/rollouts/staging/")
                       .headers["ETag"]}
        wanted = {alice.username: (3, 40), bob.username: (2, 60)}
        barrier = threading.Barrier(2)
        results: dict[str, int] = {}

        def put(user, *, barrier=barrier, name=name, wanted=wanted, headers=headers, results=results):
            barrier.wait()
            response = _put(client_for(user), name, *wanted[user.username], **headers)
            results[user.username] = response.status_code
            connection.close()

        threads = [threading.Thread(target=put, args=(user,)) for user in (alice, bob)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert sorted(results.values()) == [200, 412 if headers else 409], (round_, results)
        winner = next(user for user, code in results.items() if code == 200)
        rollout = Rollout.objects.get(entry_key=name)
        assert (rollout.candidate_version, rollout.percent) == wanted[winner], round_
