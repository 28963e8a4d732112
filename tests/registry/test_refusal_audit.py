"""A change refused by team ownership leaves one `refused` audit row (registry.refusals)
naming the actor, the entry, the owned folder, what was attempted and why, on every path (service,
admin form, REST API, import, review decision), and the row outlives the rollback of
the refused change; the admin audit list says it in words."""

from __future__ import annotations

import pytest
from django.db import transaction

from registry.authoring import drafts
from registry.errors import FolderOwnershipDenied
from registry.models import AuditAction, AuditEntry, Prompt
from registry.portable.importer import ImportFailed, import_documents
from registry.refusals import record_refusal
from registry.release import reviews
from tests.api.conftest import client_for as api_client_for
from tests.factories import make_prompt
from tests.registry.test_admin import client_for, prompt_post, url

pytestmark = pytest.mark.django_db



def refused_rows():
    return list(AuditEntry.objects.filter(action=AuditAction.REFUSED).order_by("pk"))


def changes_of(row) -> dict:
    return {c["field"]: c["after"] for c in row.changes}


def test_a_refused_save_is_audited_with_actor_entry_folder_attempt_and_reason(team, editor):
    prompt = make_prompt("inside", folder="support/billing")
    with pytest.raises(FolderOwnershipDenied) as caught:
        drafts.save_draft(prompt, {"description": "mine now"}, acting_user=editor)
    [row] = refused_rows()
    assert (row.actor, row.actor_name, row.entry_kind, row.entry_key, row.entry_id) == (
        editor, editor.username, "prompt", "inside", prompt.pk)
    assert changes_of(row) == {"attempted": "edit", "folder": "support", "team": "Support team"}
    assert row.note == caught.value.message
    assert not AuditEntry.objects.filter(action=AuditAction.EDIT, entry_key="inside").exists()


def test_a_refused_move_and_a_refused_creation_name_what_was_attempted(team, editor):
    outside = make_prompt("outside", folder="sales")
    for entry, data in ((outside, {"folder": "support"}),
                        (Prompt(), {"name": "new", "folder": "support", "messages": [{"text": "Hi"}]})):
        with pytest.raises(FolderOwnershipDenied):
            drafts.save_draft(entry, data, acting_user=editor)
    moved, created = refused_rows()
    assert changes_of(moved)["attempted"] == "move" and moved.entry_key == "outside"
    assert changes_of(created)["attempted"] == "create" and created.entry_key == "new"
    assert created.entry_id is None and not Prompt.objects.filter(name="new").exists()


def test_the_refusal_row_outlives_the_rollback_of_an_outer_transaction(team, editor):
    prompt = make_prompt("inside", folder="support")
    # transaction.atomic(): a caller's block, rolled back by the refusal leaving it
    with pytest.raises(FolderOwnershipDenied) as caught, transaction.atomic():
        drafts.save_draft(prompt, {"description": "x"}, acting_user=editor)
    assert refused_rows() == []  # the row the service wrote went with the caller's block
    record_refusal(caught.value)  # the path's boundary, after the rollback
    record_refusal(caught.value)  # ... and only once, however many places see it
    assert len(refused_rows()) == 1


def test_an_allowed_save_writes_no_refusal(team):
    drafts.save_draft(make_prompt("inside", folder="support"), {"description": "ok"}, acting_user=team["editor"])
    assert refused_rows() == []


def test_the_admin_form_refusal_is_audited(client, team, editor):
    outside = make_prompt("outside", folder="sales")
    response = client_for(client, editor).post(url("prompt_change", outside.pk),
                                               prompt_post(outside, folder="support/billing"))
    assert response.status_code == 200
    [row] = refused_rows()
    assert row.entry_key == "outside" and changes_of(row)["attempted"] == "move" and row.actor == editor


def test_the_admin_publish_page_audits_an_outsider_publishers_post_not_a_visit(client, team, publisher):
    prompt = make_prompt("inside", folder="support")
    client_for(client, publisher)
    assert client.get(url("prompt_publish", prompt.pk)).status_code == 403
    assert refused_rows() == []  # opening the page tries nothing
    assert client.post(url("prompt_publish", prompt.pk), {"note": "ship it"}).status_code == 403
    [row] = refused_rows()
    assert row.actor == publisher and changes_of(row)["attempted"] == "decide"


def test_the_admin_publish_page_tells_an_outsider_publisher_whose_folder_it_is(client, team, publisher, editor):
    prompt = make_prompt("inside", folder="support")
    client_for(client, publisher)
    page = client.get(url("prompt_publish", prompt.pk)).content.decode()
    assert "belongs to the team" in page and "Support team" in page
    assert "Ask a publisher" not in page  # they are one: asking another would not help
    client_for(client, editor)  # no publisher at all: the usual answer
    page = client.get(url("prompt_publish", prompt.pk)).content.decode()
    assert "Ask a publisher" in page


def test_an_outsiders_delete_is_refused_with_the_reason_and_audited_not_a_bare_403(client, team, editor):
    prompt = make_prompt("inside", folder="support")
    client_for(client, editor)
    visit = client.get(url("prompt_delete", prompt.pk), follow=True)
    assert visit.status_code == 200 and "belongs to the team" in visit.content.decode()
    assert refused_rows() == []  # opening the page tries nothing
    response = client.post(url("prompt_delete", prompt.pk), {"post": "yes"}, follow=True)
    assert response.status_code == 200 and "Support team" in response.content.decode()
    assert Prompt.objects.filter(pk=prompt.pk).exists()
    [row] = refused_rows()
    assert (row.actor, row.entry_key, changes_of(row)["attempted"]) == (editor, "inside", "delete")


def test_delete_selected_deletes_the_allowed_entries_and_refuses_the_owned_ones_each_audited(client, team, editor):
    inside, outside = make_prompt("inside", folder="support"), make_prompt("outside", folder="sales")
    client_for(client, editor)
    response = client.post(url("prompt_changelist"), {"action": "delete_selected", "post": "yes",
                                                      "_selected_action": [inside.pk, outside.pk]}, follow=True)
    assert response.status_code == 200 and "Support team" in response.content.decode()
    assert list(Prompt.objects.values_list("name", flat=True)) == ["inside"]
    [row] = refused_rows()
    assert (row.entry_key, changes_of(row)["attempted"]) == ("inside", "delete")
    assert AuditEntry.objects.filter(action=AuditAction.DELETE, entry_key="outside").exists()


def test_delete_selected_of_only_owned_entries_deletes_nothing_and_says_why(client, team, editor):
    inside = make_prompt("inside", folder="support")
    response = client_for(client, editor).post(url("prompt_changelist"), {
        "action": "delete_selected", "post": "yes", "_selected_action": [inside.pk]}, follow=True)
    assert response.status_code == 200 and "belongs to the team" in response.content.decode()
    assert Prompt.objects.filter(pk=inside.pk).exists() and len(refused_rows()) == 1


def test_the_api_refusal_is_audited_after_the_views_transaction(team, editor):
    make_prompt("inside", folder="support")
    response = api_client_for(editor).patch("/api/v1/prompts/inside/", {"description": "x"}, format="json")
    assert response.status_code == 403
    [row] = refused_rows()
    assert row.entry_key == "inside" and row.actor == editor and row.note == response.json()["detail"]


@pytest.mark.parametrize("bulk", [True, False])
def test_a_refused_import_is_audited_though_the_import_rolled_back(tmp_path, team, editor, bulk):
    make_prompt("greet", folder="support")
    path = tmp_path / "registry.yaml"
    path.write_text("prompts:\n  - name: greet\n    folder: support\n    description: changed\n"
                    "    messages:\n      - {role: user, text: Hello}\n")
    with pytest.raises(ImportFailed):
        import_documents(path, acting_user=editor, bulk=bulk)
    [row] = refused_rows()
    assert row.entry_key == "greet" and changes_of(row)["attempted"] == "import" and row.actor == editor
    with pytest.raises(ImportFailed):
        import_documents(path, acting_user=editor, bulk=bulk, dry_run=True)
    assert len(refused_rows()) == 1  # a dry run tried nothing


def test_a_refused_review_decision_is_audited(team, publisher):
    prompt = make_prompt("inside", folder="support")
    review = reviews.request_publication(prompt, acting_user=team["editor"], note="please", label="production")
    with pytest.raises(FolderOwnershipDenied):
        reviews.approve(review, acting_user=publisher)
    [row] = refused_rows()
    assert row.actor == publisher and changes_of(row)["attempted"] == "decide"


def test_the_audit_list_says_the_refusal_in_words(client, team, editor, superuser):
    prompt = make_prompt("inside", folder="support")
    with pytest.raises(FolderOwnershipDenied):
        drafts.save_draft(prompt, {"description": "x"}, acting_user=editor)
    page = client_for(client, superuser).get(url("auditentry_changelist")).content.decode()
    assert "Refused: tried to change the draft in the folder “support” of the team “Support team”." in page
