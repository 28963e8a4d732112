"""Drafts, versions, labels and release actions through /api/v1/{prompts,resources,templates}/."""

from __future__ import annotations

import base64

import pytest

from registry.models import AuditEntry, Prompt, Resource
from tests.api.conftest import client_for
from tests.factories import PNG_1X1, make_prompt, make_resource, make_template, make_user, release

pytestmark = pytest.mark.django_db

PROMPT = {
    "name": "code-review",
    "title": "Code review",
    "description": "Review a diff.",
    "tags": ["Engineering", "review"],
    "arguments": [{"name": "language", "required": True, "suggestions": ["python", "go"]}],
    "messages": [{"role": "user", "kind": "text", "text": "Review this {{ language }} diff."}],
}


def test_anonymous_callers_are_refused(client):
    assert client.get("/api/v1/prompts/").status_code in (401, 403)


def test_editor_creates_a_prompt_draft_and_it_is_audited(as_editor, editor):
    response = as_editor.post("/api/v1/prompts/", {**PROMPT, "note": "from CI"}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["name"] == "code-review"
    assert body["tags"] == ["engineering", "review"]
    assert body["arguments"][0]["suggestions"] == ["python", "go"]
    assert body["latest_version"] is None and body["labels"] == {}
    assert body["warnings"] == []
    assert Prompt.objects.filter(name="code-review").exists()
    audit = AuditEntry.objects.get(entry_kind="prompt", entry_key="code-review")
    assert (audit.action, audit.actor_id, audit.note) == ("create", editor.pk, "from CI")


def test_retrieve_returns_the_draft_by_name(as_auditor):
    make_prompt("greet")
    response = as_auditor.get("/api/v1/prompts/greet/")
    assert response.status_code == 200
    [message] = response.json()["messages"]
    assert (message["role"], message["kind"], message["text"]) == ("user", "text", "Tell me about {{ topic }}.")


def test_patch_changes_only_the_given_fields_and_audits_the_diff(as_editor):
    make_prompt("greet")
    response = as_editor.patch("/api/v1/prompts/greet/", {"title": "Greeting"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["title"] == "Greeting"
    assert response.json()["messages"][0]["text"] == "Tell me about {{ topic }}."
    edit = AuditEntry.objects.get(action="edit", entry_key="greet")
    assert [c["field"] for c in edit.changes] == ["title"]


def test_put_is_declarative_like_the_import(as_editor):
    make_prompt("greet", title="Old title")
    payload = {"name": "greet", "messages": [{"text": "Hello"}]}
    response = as_editor.put("/api/v1/prompts/greet/", payload, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["title"] == "" and response.json()["arguments"] == []


def test_undeclared_placeholder_is_a_400_and_nothing_is_saved(as_editor):
    payload = {**PROMPT, "messages": [{"text": "Review {{ langauge }}"}]}
    response = as_editor.post("/api/v1/prompts/", payload, format="json")
    assert response.status_code == 400
    assert "{{ langauge }}" in response.json()["non_field_errors"][0]
    assert not Prompt.objects.exists()


def test_per_message_problems_are_reported_on_the_message_field(as_editor):
    payload = {**PROMPT, "messages": [{"text": "Review {{ language }}"}, {"kind": "text", "text": "   "},
                                      {"kind": "image", "mime_type": "text/plain",
                                       "data": base64.b64encode(PNG_1X1).decode()}]}
    response = as_editor.post("/api/v1/prompts/", payload, format="json")
    assert response.status_code == 400
    messages = response.json()["messages"]
    assert "0" not in messages  # DRF's nested-list format: only the messages with problems, by index
    assert messages["1"]["text"] == ["The text is empty."]
    assert "image/..." in messages["2"]["mime_type"][0]


@pytest.mark.parametrize("payload, field", [
    ({"name": "has spaces", "messages": [{"text": "x"}]}, "name"),
    ({"name": "ok", "messages": [{"kind": "nonsense", "text": "x"}]}, "messages"),
    ({"name": "ok", "messages": "not a list"}, "messages"),
    ({"name": "ok", "arguments": [{"name": "1bad"}], "messages": [{"text": "x"}]}, "arguments"),
    ({"name": "ok", "messages": [{"kind": "image", "data": "%%% not base64"}]}, "messages"),
    ({"title": "no name"}, "name"),
    ({"name": "ok", "messages": []}, "messages"),
    ({"name": "ok", "tags": [f"tag-{i:03d}-long-enough" for i in range(40)], "messages": [{"text": "x"}]}, "tags"),
])
def test_malformed_prompt_payloads_answer_400_with_field_errors(as_editor, payload, field):
    response = as_editor.post("/api/v1/prompts/", payload, format="json")
    assert response.status_code == 400
    assert field in response.json()


def test_a_non_json_body_is_a_400(as_editor):
    response = as_editor.post("/api/v1/prompts/", "{not json", content_type="application/json")
    assert response.status_code == 400


def test_duplicate_name_is_a_field_error(as_editor):
    make_prompt("taken")
    response = as_editor.post("/api/v1/prompts/", {**PROMPT, "name": "taken"}, format="json")
    assert response.status_code == 400 and "name" in response.json()


def test_published_name_cannot_change(as_editor):
    release(make_prompt("stable"), labels=())
    response = as_editor.patch("/api/v1/prompts/stable/", {"name": "renamed"}, format="json")
    assert response.status_code == 400
    assert "cannot change once published" in response.json()["name"][0]


def test_auditor_cannot_write_drafts(as_auditor):
    assert as_auditor.post("/api/v1/prompts/", PROMPT, format="json").status_code == 403


def test_resource_draft_with_bytes_and_lookup_by_uri(as_editor):
    payload = {"uri": "docs://logo", "name": "logo", "mime_type": "image/png",
               "data": base64.b64encode(PNG_1X1).decode(), "audience": ["assistant", "user"], "priority": 0.5}
    response = as_editor.post("/api/v1/resources/", payload, format="json")
    assert response.status_code == 201, response.json()
    found = as_editor.get("/api/v1/resources/lookup/", {"uri": "docs://logo"})
    assert found.status_code == 200
    assert base64.b64decode(found.json()["data"]) == PNG_1X1
    assert found.json()["audience"] == ["user", "assistant"]
    assert found.json()["id"] == Resource.objects.get().pk


def test_resource_with_text_and_bytes_is_refused(as_editor):
    payload = {"uri": "docs://both", "name": "both", "text": "hi", "data": base64.b64encode(b"x").decode()}
    response = as_editor.post("/api/v1/resources/", payload, format="json")
    assert response.status_code == 400 and "non_field_errors" in response.json()


def test_resource_uri_and_priority_are_checked(as_editor):
    response = as_editor.post("/api/v1/resources/", {"uri": "no scheme", "name": "x", "priority": 3},
                              format="json")
    assert response.status_code == 400
    assert {"uri", "priority"} <= set(response.json())


def test_template_body_may_only_use_uri_variables(as_editor):
    payload = {"uri_template": "tickets://{id}", "name": "ticket", "body": "Ticket {{ nope }}"}
    response = as_editor.post("/api/v1/templates/", payload, format="json")
    assert response.status_code == 400 and "body" in response.json()
    payload["body"] = "Ticket {{ id }}"
    response = as_editor.post("/api/v1/templates/", payload, format="json")
    assert response.status_code == 201, response.json()
    template_id = response.json()["id"]
    assert as_editor.get("/api/v1/templates/lookup/", {"uri_template": "tickets://{id}"}).json()["id"] == template_id


def test_list_is_paginated(as_auditor):
    for index in range(5):
        make_prompt(f"p{index}")
    page = as_auditor.get("/api/v1/prompts/", {"limit": 2, "offset": 2}).json()
    assert page["count"] == 5
    assert [p["name"] for p in page["results"]] == ["p2", "p3"]
    assert page["next"] and page["previous"]


def test_list_filters_by_tag_label_archived_and_search(as_auditor, publisher):
    make_prompt("alpha", tags="ops, writing", description="About alpha")
    beta = make_prompt("beta", tags="ops")
    release(beta, labels=("staging",))
    gone = make_prompt("gamma", tags="writing", title="Gamma findme")
    from registry.release import services

    services.set_archived(gone, archived=True, acting_user=publisher)

    def names(**params):
        response = as_auditor.get("/api/v1/prompts/", params)
        assert response.status_code == 200, response.json()
        return [p["name"] for p in response.json()["results"]]

    assert names(tag="writing") == ["alpha", "gamma"]
    assert names(tag="OPS") == ["alpha", "beta"]
    assert names(label="staging") == ["beta"]
    assert names(archived="true") == ["gamma"]
    assert names(archived="false") == ["alpha", "beta"]
    assert names(search="findme") == ["gamma"]
    assert names(name="beta") == ["beta"]
    assert as_auditor.get("/api/v1/prompts/", {"archived": "maybe"}).status_code == 400


def test_resources_list_filters_by_exact_uri(as_auditor):
    make_resource("docs://a")
    make_resource("docs://b")
    results = as_auditor.get("/api/v1/resources/", {"uri": "docs://b"}).json()["results"]
    assert [r["key"] for r in results] == ["docs://b"]


def test_versions_and_labels(as_auditor):
    prompt = make_prompt("greet")
    release(prompt, labels=("staging",))
    listed = as_auditor.get("/api/v1/prompts/greet/versions/").json()
    assert [(v["number"], v["labels"]) for v in listed["results"]] == [(1, ["staging"])]
    one = as_auditor.get("/api/v1/prompts/greet/versions/1/").json()
    assert one["snapshot"]["name"] == "greet"
    assert as_auditor.get("/api/v1/prompts/greet/versions/9/").status_code == 404
    labels = as_auditor.get("/api/v1/prompts/greet/labels/").json()
    assert [(label["name"], label["version"]) for label in labels] == [("staging", 1)]


def test_publisher_publishes_to_an_unprotected_label(as_publisher):
    make_prompt("greet")
    response = as_publisher.post("/api/v1/prompts/greet/publish/", {"note": "first", "labels": ["staging"]},
                                 format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["number"] == 1 and response.json()["labels"] == ["staging"]


def test_publish_needs_a_note(as_publisher):
    make_prompt("greet")
    response = as_publisher.post("/api/v1/prompts/greet/publish/", {"labels": ["staging"]}, format="json")
    assert response.status_code == 400 and "note" in response.json()


def test_an_editors_token_cannot_publish(as_editor):
    make_prompt("greet")
    response = as_editor.post("/api/v1/prompts/greet/publish/", {"note": "x", "labels": ["staging"]},
                              format="json")
    assert response.status_code == 403
    assert "not publish" in response.json()["detail"]


def test_a_superusers_plain_publish_to_production_is_refused_without_approval(as_superuser):
    make_prompt("greet")
    response = as_superuser.post("/api/v1/prompts/greet/publish/", {"note": "straight to prod"}, format="json")
    assert response.status_code == 409
    assert "protected" in response.json()["detail"]
    assert response.json()["code"] == "approval_required"
    assert not Prompt.objects.get(name="greet").versions.exists()  # the version was rolled back too


def test_publish_with_request_review_moves_what_it_may_and_files_a_review_for_each_protected_label(as_publisher):
    """The admin's Publish page and the API release through one service (reviews.publish_or_request)."""
    from registry.models import ReviewRequest

    make_prompt("greet")
    response = as_publisher.post("/api/v1/prompts/greet/publish/", {
        "note": "new greeting", "labels": ["staging", "production"], "request_review": True}, format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["number"] == 1 and body["labels"] == ["staging"]
    review = ReviewRequest.objects.get()
    assert body["review_requests"] == [review.pk]
    assert (review.label, review.version_number, review.status) == ("production", 1, "pending")


def test_a_superuser_may_override_with_a_reason_and_it_is_audited(as_superuser):
    make_prompt("greet")
    response = as_superuser.post("/api/v1/prompts/greet/publish/",
                                 {"note": "hotfix", "override_reason": "incident 42"}, format="json")
    assert response.status_code == 201, response.json()
    assert AuditEntry.objects.filter(action="override", note="incident 42").exists()


def test_moving_production_without_approval_is_refused_and_rollback_too(as_publisher):
    prompt = make_prompt("greet")
    release(prompt)
    prompt.description = "v2"
    prompt.save()
    release(prompt, note="second", labels=("staging",))
    moved = as_publisher.post("/api/v1/prompts/greet/move-label/", {"label": "production", "version": 2},
                              format="json")
    assert moved.status_code == 409
    back = as_publisher.post("/api/v1/prompts/greet/rollback/", {"label": "staging", "note": "bad"},
                             format="json")
    assert back.status_code == 200, back.json()
    assert back.json()["version"] == 1


def test_move_label_validates_its_payload(as_publisher):
    make_prompt("greet")
    response = as_publisher.post("/api/v1/prompts/greet/move-label/", {"label": "Bad Label!", "version": 0},
                                 format="json")
    assert response.status_code == 400
    assert {"label", "version"} <= set(response.json())


def test_archive_and_unarchive(as_publisher, as_editor):
    make_prompt("greet")
    assert as_editor.post("/api/v1/prompts/greet/archive/", {}, format="json").status_code == 403
    response = as_publisher.post("/api/v1/prompts/greet/archive/", {"note": "retired"}, format="json")
    assert response.status_code == 200 and response.json()["archived_at"]
    response = as_publisher.post("/api/v1/prompts/greet/unarchive/", {}, format="json")
    assert response.json()["archived_at"] is None


def test_template_publish_by_id(as_publisher):
    template = make_template("items://{id}")
    response = as_publisher.post(f"/api/v1/templates/{template.pk}/publish/", {"note": "x", "labels": ["staging"]},
                                 format="json")
    assert response.status_code == 201, response.json()


def test_rollout_get_set_and_complete(as_publisher):
    prompt = make_prompt("greet")
    release(prompt, labels=("staging",))
    prompt.description = "v2"
    prompt.save()
    release(prompt, note="second", labels=())
    assert as_publisher.get("/api/v1/prompts/greet/rollouts/staging/").status_code == 404
    response = as_publisher.put("/api/v1/prompts/greet/rollouts/staging/", {"version": 2, "percent": 25},
                                format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["percent"] == 25 and response.json()["label_version"] == 1
    assert [r["label"] for r in as_publisher.get("/api/v1/prompts/greet/rollouts/").json()] == ["staging"]
    assert as_publisher.put("/api/v1/prompts/greet/rollouts/staging/", {"version": 2, "percent": 101},
                            format="json").status_code == 400
    done = as_publisher.put("/api/v1/prompts/greet/rollouts/staging/", {"version": 2, "percent": 100},
                            format="json")
    assert done.status_code == 204
    assert as_publisher.get("/api/v1/prompts/greet/labels/").json()[0]["version"] == 2


def test_editor_cannot_set_a_rollout(as_editor):
    release(make_prompt("greet"), labels=("staging",))
    response = as_editor.put("/api/v1/prompts/greet/rollouts/staging/", {"version": 1, "percent": 10},
                             format="json")
    assert response.status_code == 403


def test_user_without_any_role_sees_nothing(db):
    nobody = make_user("Editors")
    nobody.groups.clear()
    client = client_for(type(nobody).objects.get(pk=nobody.pk))
    assert client.get("/api/v1/prompts/").status_code == 403


def test_dotted_prompt_names_work_in_the_path(as_editor):
    make_prompt("summarise.v2")
    assert as_editor.get("/api/v1/prompts/summarise.v2/").json()["name"] == "summarise.v2"
    assert as_editor.get("/api/v1/prompts/summarise.json/").status_code == 404


def test_a_tag_change_is_audited_with_the_tags_in_the_diff(as_editor):
    make_prompt("greet", tags="ops")
    response = as_editor.patch("/api/v1/prompts/greet/", {"tags": ["ops", "Writing"]}, format="json")
    assert response.json()["tags"] == ["ops", "writing"]
    edit = AuditEntry.objects.get(action="edit", entry_key="greet")
    assert edit.changes == [{"field": "tags", "before": ["ops"], "after": ["ops", "writing"]}]


def test_an_unchanged_patch_writes_no_audit_row(as_editor):
    make_prompt("greet", title="Same")
    as_editor.patch("/api/v1/prompts/greet/", {"title": "Same"}, format="json")
    assert not AuditEntry.objects.filter(action="edit").exists()


def test_a_message_may_link_a_registry_resource_by_uri(as_editor):
    make_resource("docs://style")
    payload = {"name": "linked", "messages": [{"kind": "resource_link", "resource_uri": "docs://style"}]}
    response = as_editor.post("/api/v1/prompts/", payload, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["messages"][0]["resource_uri"] == "docs://style"
    payload = {"name": "broken", "messages": [{"kind": "resource", "resource_uri": "docs://missing"}]}
    response = as_editor.post("/api/v1/prompts/", payload, format="json")
    assert response.status_code == 400
    assert "docs://missing" in response.json()["messages"]["0"]["resource_uri"][0]


def test_lookup_needs_a_clean_key(as_auditor):
    assert "uri" in as_auditor.get("/api/v1/resources/lookup/").json()
    assert as_auditor.get("/api/v1/resources/lookup/", {"uri": "docs://a\x00b"}).status_code == 400
    assert as_auditor.get("/api/v1/resources/lookup/", {"uri": "docs://none"}).status_code == 404


def test_listing_costs_the_same_few_queries_for_many_entries(as_auditor, django_assert_max_num_queries):
    for index in range(30):
        release(make_prompt(f"p{index:02d}", tags="ops"), labels=("staging",))
    as_auditor.get("/api/v1/prompts/", {"limit": 5})  # warm the token/permission path
    with django_assert_max_num_queries(8):
        response = as_auditor.get("/api/v1/prompts/", {"limit": 30, "tag": "ops"})
    assert len(response.json()["results"]) == 30
    assert response.json()["results"][0]["labels"] == {"staging": 1}


def test_warnings_come_back_without_blocking_the_save(as_editor):
    payload = {"name": "loose", "arguments": [{"name": "unused", "required": False}], "messages": [{"text": "Hi"}]}
    response = as_editor.post("/api/v1/prompts/", payload, format="json")
    assert response.status_code == 201
    assert any("no description" in w for w in response.json()["warnings"])
    assert any("'unused'" in w for w in response.json()["warnings"])


def _second_version(kind, key):
    """Give the entry a second version on production (as the operator), so production served v1 then v2."""
    from registry.kinds import KINDS

    entry = KINDS[kind].entry_model.objects.get(**{KINDS[kind].key_field: key})
    entry.description = "second"
    entry.save()
    release(entry, note="v2")
    return entry


@pytest.mark.parametrize("kind,path,make,key", [
    ("prompt", "prompts/greet", lambda: make_prompt("greet"), "greet"),
    ("resource", "resources/{pk}", lambda: make_resource("docs://guide"), "docs://guide"),
    ("template", "templates/{pk}", lambda: make_template("items://{id}"), "items://{id}"),
])
def test_a_rollback_through_the_api_never_moves_production_forward(as_publisher, kind, path, make, key):
    entry = make()
    release(entry, note="v1")
    entry = _second_version(kind, key)
    url = f"/api/v1/{path.format(pk=entry.pk)}/rollback/"
    back = as_publisher.post(url, {"note": "v2 is broken", "to_version": 1}, format="json")
    assert back.status_code == 200, back.json()  # an incident rollback: production served v1 before
    forward = as_publisher.post(url, {"note": "v2 is fine", "to_version": 2}, format="json")
    assert forward.status_code == 409, forward.json()
    assert forward.json()["code"] == "not_an_older_version"
    assert entry.labels.get(name="production").version.number == 1
    assert AuditEntry.objects.filter(action="incident_rollback").count() == 1


@pytest.mark.parametrize("path,key", [("prompts/spaced", "spaced"), ("resources/{pk}", "docs://trailing"),
                                      ("templates/{pk}", "items://{id}")])
def test_a_draft_read_and_written_back_unchanged_changes_nothing(as_editor, tmp_path, path, key):
    """The API keeps text as given (DRF trims by default): GET then PUT of an imported entry is a no-op."""
    from registry.authoring.snapshots import snapshot_of
    from registry.kinds import KINDS
    from registry.portable.importer import export_yaml, import_documents
    from tests.factories import UNTRIMMED_YAML as DOC

    (tmp_path / "doc.yaml").write_text(DOC, encoding="utf-8")
    import_documents(tmp_path / "doc.yaml", publish=False)
    kind = {"prompts": "prompt", "resources": "resource", "templates": "template"}[path.split("/")[0]]
    entry = KINDS[kind].entry_model.objects.get(**{KINDS[kind].key_field: key})
    before, exported = snapshot_of(entry), export_yaml()
    url = f"/api/v1/{path.format(pk=entry.pk)}/"
    draft = as_editor.get(url).json()
    response = as_editor.put(url, draft, format="json")
    assert response.status_code == 200, response.json()
    assert not AuditEntry.objects.filter(action="edit").exists()
    assert snapshot_of(type(entry).objects.get(pk=entry.pk)) == before and export_yaml() == exported
