"""Prompts as code over HTTP: export YAML, import it back (dry run, publish, errors)."""

from __future__ import annotations

import pytest
import yaml

from registry.models import AuditEntry, Prompt
from tests.factories import make_prompt, make_resource

pytestmark = pytest.mark.django_db

DOCUMENT = """\
prompts:
  - name: code-review
    description: Review a diff.
    labels: [staging]
    arguments:
      - {name: language, required: true}
    messages:
      - text: "Review this {{ language }} diff."
"""


def post_yaml(client, text, **params):
    query = "&".join(f"{k}={v}" for k, v in params.items())
    return client.generic("POST", f"/api/v1/import/?{query}", text.encode(), content_type="application/yaml")


def test_export_returns_yaml(as_auditor):
    make_prompt("greet")
    make_resource("docs://style")
    response = as_auditor.get("/api/v1/export/")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/yaml")
    document = yaml.safe_load(response.content)
    assert [p["name"] for p in document["prompts"]] == ["greet"]
    assert [r["uri"] for r in document["resources"]] == ["docs://style"]


def test_dry_run_reports_and_saves_nothing(as_editor):
    response = post_yaml(as_editor, DOCUMENT, dry_run="true")
    assert response.status_code == 200, response.json()
    body = response.json()
    assert body["dry_run"] is True and "dry run" in body["summary"]
    assert [(o["kind"], o["key"], o["status"]) for o in body["outcomes"]] == [("prompt", "code-review", "created")]
    assert not Prompt.objects.exists()


def test_import_as_json_with_publish_to_an_unprotected_label(as_publisher):
    response = as_publisher.post("/api/v1/import/", {"document": DOCUMENT, "publish": True, "note": "from CI"},
                                 format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["outcomes"][0]["published"] == 1
    prompt = Prompt.objects.get(name="code-review")
    assert prompt.labels.get().name == "staging"
    assert AuditEntry.objects.filter(entry_key="code-review", action="publish", actor_id__isnull=False).exists()


def test_import_publish_to_production_needs_approval(as_superuser):
    response = post_yaml(as_superuser, DOCUMENT.replace("[staging]", "[production]"), publish="true",
                         note="release")
    assert response.status_code == 400
    assert "protected" in " ".join(response.json()["problems"])
    assert not Prompt.objects.exists()


def test_import_publish_to_production_with_an_override_reason_by_a_release_manager(release_manager):
    from tests.api.conftest import client_for

    response = post_yaml(client_for(release_manager), DOCUMENT.replace("[staging]", "[production]"), publish="true",
                         note="release", override_reason="incident-7")
    assert response.status_code == 200, response.json()
    assert AuditEntry.objects.filter(action="override", note="incident-7").exists()


def test_errors_name_file_line_entry_and_field(as_editor):
    broken = DOCUMENT.replace("description:", "descripton:")
    response = post_yaml(as_editor, broken, filename="prompts.yaml")
    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem.startswith("prompts.yaml:3:") and "code-review" in problem and "description" in problem


def test_malformed_yaml_is_a_400(as_editor):
    response = post_yaml(as_editor, "prompts: [unclosed")
    assert response.status_code == 400 and response.json()["problems"]


def test_control_characters_are_a_400_not_a_server_error(as_editor):
    response = as_editor.post("/api/v1/import/", {"document": "prompts: \x93", "dry_run": True}, format="json")
    assert response.status_code == 400
    assert "not readable as YAML" in response.json()["problems"][0]


def test_side_files_cannot_read_the_servers_files(as_editor):
    text = "resources:\n  - uri: docs://x\n    name: x\n    file: ../../../etc/hostname\n"
    response = post_yaml(as_editor, text)
    assert response.status_code == 400


def test_publish_without_note_is_a_field_error(as_publisher):
    response = post_yaml(as_publisher, DOCUMENT, publish="true")
    assert response.status_code == 400 and "note" in response.json()


def test_auditors_cannot_import(as_auditor):
    assert post_yaml(as_auditor, DOCUMENT).status_code == 403


def test_export_then_import_round_trip_changes_nothing(as_publisher):
    make_prompt("greet", tags="ops")
    make_resource("docs://style")
    exported = as_publisher.get("/api/v1/export/").content.decode()
    audit_rows = AuditEntry.objects.count()
    response = post_yaml(as_publisher, exported)
    assert response.status_code == 200, response.json()
    assert response.json()["changed"] is False
    assert {o["status"] for o in response.json()["outcomes"]} == {"unchanged"}
    assert AuditEntry.objects.count() == audit_rows


def test_an_alias_bomb_dry_run_is_a_400_naming_the_line(as_editor):
    bomb = 'a: &a ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
        f"{name}: &{name} [{','.join([f'*{prev}'] * 9)}]\n"
        for prev, name in zip("abcde", "bcdef", strict=True)) + "prompts: [*f]\n"
    response = post_yaml(as_editor, bomb, dry_run="true", filename="bomb.yaml")
    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem.startswith("bomb.yaml:2: YAML aliases are not supported")


def test_a_self_referencing_alias_is_a_400_not_a_server_error(as_editor):
    response = post_yaml(as_editor, "prompts: &a [*a]\n", dry_run="true")
    assert response.status_code == 400
    assert response.json()["problems"][0].startswith("import.yaml:1: YAML aliases are not supported")


def test_deep_nesting_is_a_400_not_a_server_error(as_editor):
    response = post_yaml(as_editor, "prompts: " + "[" * 50_000 + "]" * 50_000, dry_run="true")
    assert response.status_code == 400
    assert "nested more than" in response.json()["problems"][0]


def test_a_lone_surrogate_in_a_yaml_dry_run_is_a_400_naming_the_line(as_editor):
    text = DOCUMENT.replace("Review a diff.", '"Review \\ud800 a diff."')
    response = post_yaml(as_editor, text, dry_run="true", filename="prompts.yaml")
    assert response.status_code == 400
    [problem] = response.json()["problems"]
    assert problem.startswith("prompts.yaml:3: the text contains a UTF-16 surrogate escape")


def test_a_lone_surrogate_in_a_json_body_is_a_400_naming_the_field(as_editor):
    body = '{"document": "prompts: []\\n# \\ud800", "dry_run": true}'
    response = as_editor.generic("POST", "/api/v1/import/", body, content_type="application/json")
    assert response.status_code == 400
    assert "Surrogate characters are not allowed" in response.json()["document"][0]


@pytest.mark.parametrize("filename", ["..", ".", "é" * 200, "../../x.yaml"])
def test_any_filename_only_names_the_file_in_messages(as_editor, filename):
    response = as_editor.post("/api/v1/import/", {"document": "prompts: [unclosed", "filename": filename,
                                                  "dry_run": True}, format="json")
    assert response.status_code == 400
    assert response.json()["problems"][0].startswith(f"{filename}:1:")


def test_a_filename_in_the_query_string_is_not_a_path(as_editor):
    response = post_yaml(as_editor, DOCUMENT, dry_run="true", filename="..")
    assert response.status_code == 200 and response.json()["source"] == ".."


def test_a_filename_holding_a_nul_is_a_400(as_editor):
    response = post_yaml(as_editor, DOCUMENT, dry_run="true", filename="a%00b")
    assert response.status_code == 400 and "filename" in response.json()


def test_an_unchanged_reimport_through_the_api_compares_no_entry_again(as_publisher, monkeypatch):
    from registry.portable import importer

    make_prompt("greet", tags="ops")
    make_resource("docs://style")
    exported = as_publisher.get("/api/v1/export/").content.decode()
    assert post_yaml(as_publisher, exported).status_code == 200  # compares each entry, notes its digest
    compared: list[str] = []
    full = importer._import_entry
    monkeypatch.setattr(importer, "_import_entry", lambda spec, **kw: compared.append(spec.key) or full(spec, **kw))
    rows = AuditEntry.objects.count()
    response = post_yaml(as_publisher, exported)
    assert response.status_code == 200 and response.json()["changed"] is False
    assert {o["status"] for o in response.json()["outcomes"]} == {"unchanged"}
    assert compared == [] and AuditEntry.objects.count() == rows
