"""/api/v1/snippets/: the same shape as /api/v1/prompts/, plus who uses a snippet or a resource."""

from __future__ import annotations

import pytest

from registry.models import AuditEntry, PromptMessage, Snippet
from tests.factories import make_prompt, make_resource, make_snippet, release

pytestmark = pytest.mark.django_db

SNIPPET = {"name": "house-style", "description": "How we write", "tags": ["Style"], "text": "Be {{ tone }}.",
           "arguments": [{"name": "tone", "type": "enum"}]}


def test_an_editor_creates_a_snippet_draft_and_reads_it_back(as_editor, as_auditor):
    response = as_editor.post("/api/v1/snippets/", {**SNIPPET, "note": "from CI"}, format="json")
    assert response.status_code == 201, response.json()
    assert Snippet.objects.get(name="house-style").arguments.get().type == "enum"
    assert AuditEntry.objects.filter(entry_kind="snippet", action="create").exists()
    body = as_auditor.get("/api/v1/snippets/house-style/").json()
    assert (body["text"], body["tags"], body["labels"]) == ("Be {{ tone }}.", ["style"], {})
    listed = as_auditor.get("/api/v1/snippets/").json()["results"]
    assert [(s["key"], s["title"]) for s in listed] == [("house-style", "")]


def test_a_snippet_draft_with_a_broken_reference_is_refused_on_its_text(as_editor):
    response = as_editor.post("/api/v1/snippets/", {**SNIPPET, "text": "Hi {{> nowhere }}", "arguments": []},
                              format="json")
    assert response.status_code == 400
    assert "'nowhere' does not exist" in response.json()["text"][0]


def test_a_prompt_draft_with_an_undeclared_snippet_argument_is_refused(as_editor):
    release(make_snippet("tone-line", text="Be {{ tone }}.", arguments=[{"name": "tone"}]))
    response = as_editor.post("/api/v1/prompts/", {
        "name": "reply", "description": "d", "arguments": [],
        "messages": [{"role": "user", "kind": "text", "text": "Hello. {{> tone-line }}"}]}, format="json")
    assert response.status_code == 400
    assert "declare an argument" in str(response.json()["messages"])


def test_a_snippet_is_published_versioned_labelled_and_shows_who_uses_it(as_publisher, as_auditor):
    make_snippet("house-style")
    response = as_publisher.post("/api/v1/snippets/house-style/publish/",
                                 {"note": "first", "labels": ["staging"]}, format="json")
    assert response.status_code == 201, response.json()
    assert [v["number"] for v in as_auditor.get("/api/v1/snippets/house-style/versions/").json()["results"]] == [1]
    assert as_auditor.get("/api/v1/snippets/house-style/labels/").json()[0]["name"] == "staging"
    prompt = make_prompt("support-reply")
    PromptMessage.objects.filter(prompt=prompt).update(text="{{ topic }} {{> house-style }}")
    release(prompt)
    used = as_auditor.get("/api/v1/snippets/house-style/used-by/").json()
    assert [(u["kind"], u["key"], u["version"], u["pinned"], u["labels"]) for u in used] == [
        ("prompt", "support-reply", 1, None, ["production"])]


def test_a_resource_shows_the_prompts_that_embed_it(as_auditor):
    resource = make_resource("docs://guide")
    release(resource)
    prompt = make_prompt("with-guide", messages=[{"role": "user", "kind": "text", "text": "{{ topic }}"},
                                                 {"role": "user", "kind": "resource", "resource": resource}])
    release(prompt)
    used = as_auditor.get(f"/api/v1/resources/{resource.pk}/used-by/").json()
    assert [(u["kind"], u["key"]) for u in used] == [("prompt", "with-guide")]


def test_archiving_a_used_snippet_is_refused_and_a_snippet_rolls_out_through_the_api(as_publisher):
    snippet = make_snippet("house-style")
    release(snippet, labels=("staging",))
    prompt = make_prompt("support-reply")
    PromptMessage.objects.filter(prompt=prompt).update(text="{{ topic }} {{> house-style }}")
    release(prompt)
    refused = as_publisher.post("/api/v1/snippets/house-style/archive/", {"note": "old"}, format="json")
    assert refused.status_code == 400 and "prompt support-reply v1" in refused.json()["detail"]
    snippet.text = "new words"
    snippet.save()
    release(snippet, labels=())
    rollout = as_publisher.put("/api/v1/snippets/house-style/rollouts/staging/",
                               {"version": 2, "percent": 10, "note": "try"}, format="json")
    assert rollout.status_code == 200, rollout.content
    shown = as_publisher.get("/api/v1/snippets/house-style/rollouts/staging/").json()
    assert (shown["candidate_version"], shown["percent"]) == (2, 10)
