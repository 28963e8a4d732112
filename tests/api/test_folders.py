"""The folder of an entry through /api/v1/{prompts,resources,templates}/: written, audited, filtered by."""

from __future__ import annotations

import pytest

from registry.models import AuditAction, AuditEntry, Prompt
from tests.factories import make_prompt, make_resource, make_template, release

pytestmark = pytest.mark.django_db

PROMPT = {"name": "greet", "folder": "Support/Billing", "messages": [{"role": "user", "kind": "text", "text": "Hi"}]}


def test_a_prompt_is_created_in_a_folder_and_the_folder_is_audited(as_editor, editor):
    response = as_editor.post("/api/v1/prompts/", PROMPT, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["folder"] == "support/billing"
    row = AuditEntry.objects.get(entry_key="greet", action=AuditAction.FOLDER_MOVED)
    assert (row.actor_id, row.changes) == (editor.pk, [{"field": "folder", "before": "", "after": "support/billing"}])


def test_a_patch_moves_an_entry_without_changing_its_draft(as_editor):
    prompt = make_prompt("greet")
    release(prompt, note="v1")
    response = as_editor.patch("/api/v1/prompts/greet/", {"folder": "sales"}, format="json")
    assert response.status_code == 200, response.json()
    assert Prompt.objects.get(pk=prompt.pk).folder == "sales"
    assert not AuditEntry.objects.filter(entry_key="greet", action=AuditAction.EDIT).exists()
    row = AuditEntry.objects.get(entry_key="greet", action=AuditAction.FOLDER_MOVED)
    assert row.changes == [{"field": "folder", "before": "", "after": "sales"}]


def test_a_put_without_the_folder_moves_the_entry_to_the_top_level(as_editor):
    make_prompt("greet", folder="sales")
    response = as_editor.put("/api/v1/prompts/greet/", {"name": "greet", "messages": [{"text": "Hi"}]}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["folder"] == ""


def test_a_bad_folder_is_a_400_naming_the_field(as_editor):
    response = as_editor.post("/api/v1/prompts/", {**PROMPT, "folder": "support/../x"}, format="json")
    assert response.status_code == 400
    assert "is not a folder path" in str(response.json()["folder"])
    assert not Prompt.objects.exists()


@pytest.mark.parametrize(("path", "make", "key"), [
    ("prompts", lambda n, f: make_prompt(n, folder=f), "name"),
    ("resources", lambda n, f: make_resource(f"docs://{n}", folder=f), "key"),
    ("templates", lambda n, f: make_template(f"{n}://{{id}}", folder=f), "key"),
])
def test_lists_filter_by_folder_with_its_sub_folders(as_auditor, path, make, key):
    for name, folder in (("a", "support"), ("b", "support/billing"), ("c", "supportive"), ("d", "")):
        make(name, folder)
    results = as_auditor.get(f"/api/v1/{path}/", {"folder": "support"}).json()["results"]
    assert sorted(r["folder"] for r in results) == ["support", "support/billing"]
    assert all(key in r for r in results)
