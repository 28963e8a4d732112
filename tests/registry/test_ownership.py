"""Team ownership of folders (registry.roles, registry/authoring/ownership.py): only the owning
group's editors change the drafts of a folder and only its publishers decide their reviews, on the
admin, REST API and import paths; a sub-folder inherits its nearest owned folder; changes of owner
are audited; the review-requested e-mail goes only to the owning team's publishers."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group
from django.core.management import CommandError, call_command
from django.utils import translation

from registry import roles
from registry.authoring import drafts
from registry.authoring.ownership import set_folder_owner
from registry.errors import FolderOwnershipDenied
from registry.mail.recipients import recipients
from registry.models import AuditAction, AuditEntry, FolderOwner, Prompt, ReviewStatus
from registry.portable import watching
from registry.portable.importer import ImportFailed, import_documents
from registry.release import reviews, rollouts, services
from tests.api.conftest import client_for as api_client_for
from tests.factories import grant, make_prompt, make_user, release
from tests.registry.test_admin import client_for, form_errors, prompt_post, url

pytestmark = pytest.mark.django_db



def _review(prompt, requester):
    return reviews.request_publication(prompt, acting_user=requester, note="please", label="production")


# ------------------------------------------------------------------------------------- the rule
def test_a_sub_folder_is_owned_by_its_nearest_owned_folder(team):
    other = Group.objects.create(name="Billing team")
    assert roles.folder_owner("support/billing/eu").group == team["group"]
    set_folder_owner("support/billing", other, acting_user=None)
    assert roles.folder_owner("support/billing/eu").group == other
    assert roles.folder_owner("support").group == team["group"]
    assert roles.folder_owner("supportive") is None and roles.folder_owner("") is None


def test_an_outsider_editor_may_not_edit_create_or_move_into_or_out_of_an_owned_folder(team, editor):
    inside, outside = make_prompt("inside", folder="support/billing"), make_prompt("outside", folder="sales")
    for entry, data in ((inside, {"description": "mine now"}), (outside, {"folder": "support"}),
                        (inside, {"folder": "sales"}), (Prompt(), {"name": "new", "folder": "support",
                                                                    "messages": [{"text": "Hi"}]})):
        with pytest.raises(FolderOwnershipDenied):
            drafts.save_draft(entry, data, acting_user=editor)
    assert Prompt.objects.get(pk=inside.pk).folder == "support/billing"
    assert Prompt.objects.get(pk=outside.pk).folder == "sales"
    assert not Prompt.objects.filter(name="new").exists()
    drafts.save_draft(outside, {"description": "unowned folders are everyone's"}, acting_user=editor)


def test_an_owner_editor_edits_and_moves_entries_of_the_folder(team):
    prompt = make_prompt("inside", folder="support/billing")
    drafts.save_draft(prompt, {"description": "better", "folder": "support/faq"}, acting_user=team["editor"])
    assert Prompt.objects.get(pk=prompt.pk).folder == "support/faq"


def test_the_refusal_names_the_folder_and_team_and_is_translated(team, editor):
    prompt = make_prompt("inside", folder="support")
    with pytest.raises(FolderOwnershipDenied) as caught:
        drafts.save_draft(prompt, {"description": "x"}, acting_user=editor)
    assert "“support”" in caught.value.message and "“Support team”" in caught.value.message
    for language, word in (("de", "Ordner"), ("zh-hans", "文件夹")):
        with translation.override(language), pytest.raises(FolderOwnershipDenied) as caught:
            drafts.save_draft(prompt, {"description": "x"}, acting_user=editor)
        assert word in caught.value.message


# ----------------------------------------------------------------------------------- deciding
def test_an_outsider_publisher_may_not_approve_an_owning_publisher_may(team, publisher):
    prompt = make_prompt("inside", folder="support")
    review = _review(prompt, team["editor"])
    assert not reviews.can_decide(publisher, review)
    with pytest.raises(FolderOwnershipDenied):
        reviews.approve(review, acting_user=publisher)
    with pytest.raises(FolderOwnershipDenied):
        reviews.reject(review, acting_user=publisher, comment="no")
    reviews.approve(review, acting_user=team["publisher"])
    review.refresh_from_db()
    assert review.status == ReviewStatus.APPROVED


def test_a_holder_of_the_registry_wide_permission_and_a_superuser_decide_anywhere(team, publisher, superuser):
    prompt = make_prompt("inside", folder="support/billing")
    review = _review(prompt, team["editor"])
    wide = grant(publisher, roles.ANY_FOLDER_PERMISSION)
    assert reviews.can_decide(wide, review) and reviews.can_decide(superuser, review)
    reviews.approve(review, acting_user=wide)


def test_an_outsider_publisher_may_not_publish_or_roll_back_in_an_owned_folder(team, publisher):
    prompt = make_prompt("inside", folder="support")
    release(prompt)
    with pytest.raises(FolderOwnershipDenied):
        services.publish(prompt, acting_user=publisher, note="x", labels=["staging"])
    with pytest.raises(FolderOwnershipDenied):
        services.set_archived(prompt, archived=True, acting_user=publisher)
    services.set_archived(prompt, archived=True, acting_user=team["publisher"])


def test_the_review_request_is_mailed_only_to_the_owning_teams_publishers(team, publisher):
    review = _review(make_prompt("inside", folder="support"), team["editor"])
    assert reviews.deciders_of(review) == [team["publisher"]]
    open_review = _review(make_prompt("outside", folder="sales"), team["editor"])
    assert {team["publisher"], publisher} <= set(reviews.deciders_of(open_review))


def test_the_review_requested_mail_recipients_are_the_owning_teams_publishers(team):
    outsider = make_user("Publishers", email="@")
    insider = make_user("Publishers", email="@")
    insider.groups.add(team["group"])
    review = _review(make_prompt("inside", folder="support/billing"), team["editor"])
    audit = AuditEntry.objects.get(action=AuditAction.REVIEW_REQUESTED, entry_key="inside")
    told = [user for user, _kind in recipients(audit, review)]
    assert insider in told and outsider not in told


# --------------------------------------------------------------------------------- write paths
def test_the_admin_refuses_an_outsider_editor_with_a_message(client, team, editor):
    prompt = make_prompt("inside", folder="support")
    outside = make_prompt("outside", folder="sales")
    client_for(client, editor)
    page = client.get(url("prompt_change", prompt.pk))
    assert page.status_code == 200 and "Support team" in page.content.decode()  # read-only, with the reason
    assert client.post(url("prompt_change", prompt.pk), prompt_post(prompt, description="x")).status_code == 403
    response = client.post(url("prompt_change", outside.pk), prompt_post(outside, folder="support/billing"))
    assert response.status_code == 200 and "Support team" in form_errors(response)
    assert Prompt.objects.get(pk=outside.pk).folder == "sales"


def test_the_admin_lets_an_owner_editor_save(client, team):
    prompt = make_prompt("inside", folder="support")
    response = client_for(client, team["editor"]).post(url("prompt_change", prompt.pk),
                                                       prompt_post(prompt, description="better"))
    assert response.status_code == 302
    assert Prompt.objects.get(pk=prompt.pk).description == "better"


def test_the_api_refuses_an_outsider_editor_with_403(team, editor):
    make_prompt("inside", folder="support")
    response = api_client_for(editor).patch("/api/v1/prompts/inside/", {"description": "x"}, format="json")
    assert response.status_code == 403 and "Support team" in response.json()["detail"]
    assert response.json()["code"] == "folder_ownership_denied"
    created = api_client_for(editor).post("/api/v1/prompts/", {"name": "new", "folder": "support/x",
                                                               "messages": [{"text": "Hi"}]}, format="json")
    assert created.status_code == 403 and not Prompt.objects.filter(name="new").exists()
    ok = api_client_for(team["editor"]).patch("/api/v1/prompts/inside/", {"description": "x"}, format="json")
    assert ok.status_code == 200, ok.json()


def test_the_api_refuses_an_outsider_publishers_approval_with_403(team, publisher):
    review = _review(make_prompt("inside", folder="support"), team["editor"])
    response = api_client_for(publisher).post(f"/api/v1/reviews/{review.pk}/approve/", {}, format="json")
    assert response.status_code == 403, response.json()


@pytest.mark.parametrize("bulk", [True, False])
def test_an_import_by_an_outsider_is_refused_with_a_problem_naming_the_entry(tmp_path, team, editor, bulk):
    make_prompt("greet", folder="support")
    path = tmp_path / "registry.yaml"
    path.write_text("prompts:\n  - name: greet\n    folder: support\n    description: changed\n"
                    "    messages:\n      - {role: user, text: Hello}\n")
    with pytest.raises(ImportFailed) as caught:
        import_documents(path, acting_user=editor, bulk=bulk)
    assert any("greet" in p and "Support team" in p for p in caught.value.problems), caught.value.problems
    assert Prompt.objects.get(name="greet").description != "changed"
    import_documents(path, acting_user=team["editor"], bulk=bulk)
    assert Prompt.objects.get(name="greet").description == "changed"


# ------------------------------------------------------------------------------------ auditing
def test_setting_changing_and_removing_the_owner_is_audited(team, superuser):
    other = Group.objects.create(name="Billing team")
    set_folder_owner("support", other, acting_user=superuser)
    set_folder_owner("support", other, acting_user=superuser)  # no change, no row
    set_folder_owner("support", None, acting_user=superuser)
    rows = AuditEntry.objects.filter(action=AuditAction.FOLDER_OWNER_CHANGED, entry_key="support").order_by("id")
    assert [(r.entry_kind, r.changes[0]["before"], r.changes[0]["after"]) for r in rows] == [
        ("folder", None, "Support team"), ("folder", "Support team", "Billing team"), ("folder", "Billing team", None)]
    assert rows.last().actor_id == superuser.pk
    assert not FolderOwner.objects.exists()


def test_the_folder_owner_admin_page_audits_the_change(client, superuser):
    group = Group.objects.create(name="Sales team")
    response = client_for(client, superuser).post(url("folderowner_add"), {"folder": "Sales", "group": group.pk})
    assert response.status_code == 302, response.content.decode()[:2000]
    row = AuditEntry.objects.get(action=AuditAction.FOLDER_OWNER_CHANGED)
    assert (row.entry_key, row.changes, row.actor_id) == ("sales", [{"field": "owner", "before": None,
                                                                     "after": "Sales team"}], superuser.pk)


def test_an_editor_may_not_manage_folder_owners(client, editor):
    assert client_for(client, editor).get(url("folderowner_changelist")).status_code == 403


def test_a_rollout_in_an_owned_folder_is_refused_to_an_outsider_publisher(team, publisher):
    prompt = make_prompt("inside", folder="support")
    release(prompt, labels=("staging",))
    drafts.save_draft(prompt, {"description": "v2"}, acting_user=team["editor"])
    services.publish(prompt, acting_user=team["publisher"], note="v2", labels=[])
    with pytest.raises(FolderOwnershipDenied):
        rollouts.set_rollout(prompt, label="staging", version_number=2, percent=10, acting_user=publisher)
    assert rollouts.set_rollout(prompt, label="staging", version_number=2, percent=10,
                                acting_user=team["publisher"]) is not None


def test_the_admin_does_not_delete_an_owned_draft_for_an_outsider(client, team, editor):
    prompt = make_prompt("inside", folder="support")
    client_for(client, editor).post(url("prompt_changelist"),
                                    {"action": "delete_selected", "_selected_action": [prompt.pk], "post": "yes"})
    assert Prompt.objects.filter(pk=prompt.pk).exists()
    assert not AuditEntry.objects.filter(action=AuditAction.DELETE).exists()


def test_a_watch_round_as_an_outsider_reports_the_entry_and_saves_nothing(tmp_path, team, editor):
    make_prompt("greet", folder="support")
    (tmp_path / "registry.yaml").write_text("prompts:\n  - name: greet\n    folder: support\n    description: changed\n"
                                            "    messages:\n      - {role: user, text: Hello}\n")
    refused = watching.import_round(tmp_path, publish=False, note="", acting_user=editor)
    assert any("greet" in p and "Support team" in p for p in refused.problems), refused.problems
    assert Prompt.objects.get(name="greet").description != "changed"
    assert watching.import_round(tmp_path, publish=False, note="", acting_user=team["editor"]).ok


def test_the_import_command_runs_as_the_user_it_is_given(tmp_path, team, editor):
    make_prompt("greet", folder="support")
    path = tmp_path / "registry.yaml"
    path.write_text("prompts:\n  - name: greet\n    folder: support\n    description: changed\n"
                    "    messages:\n      - {role: user, text: Hello}\n")
    err = StringIO()
    with pytest.raises(CommandError):
        call_command("registry_import", str(path), "--as-user", editor.username, stderr=err, stdout=StringIO())
    assert "Support team" in err.getvalue()
    call_command("registry_import", str(path), "--as-user", team["editor"].username, stdout=StringIO())
    assert Prompt.objects.get(name="greet").description == "changed"


def test_an_owner_row_saved_anywhere_is_stored_as_the_rule_looks_it_up(team):
    """Only the admin lower-cased the folder: a row made in a shell or a fixture kept "Sales", and
    the rule, which looks up "sales", never enforced it."""
    group = Group.objects.create(name="Sales team")
    FolderOwner.objects.create(folder="Sales", group=group)
    assert roles.folder_owner("sales/emea").group == group


def test_an_owner_for_a_folder_owned_already_in_other_capitals_is_a_form_error_not_a_crash(client, team, superuser):
    other = Group.objects.create(name="Other team")
    response = client_for(client, superuser).post(url("folderowner_add"), {"folder": "Support", "group": other.pk})
    assert response.status_code == 200 and FolderOwner.objects.get(folder="support").group == team["group"]
    assert form_errors(response)
