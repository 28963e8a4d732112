"""Refusals by role and by the approval rules are audited like ownership refusals
(registry.refusals): publishing without the publisher role, moving a protected label without an
approved review, the emergency override without its permission, approving one's own request,
commenting on or cancelling someone else's review. One `refused` row each, on the service, the
REST API and the admin publish page; the audit list says it in words."""

from __future__ import annotations

import pytest

from registry.errors import ApprovalRequired, PublishPermissionDenied, SelfApproval
from registry.models import AuditAction, AuditEntry
from registry.release import discussion, reviews, services
from tests.api.conftest import client_for as api_client_for
from tests.factories import make_prompt, release
from tests.registry.test_admin import client_for, url
from tests.registry.test_refusal_audit import changes_of, refused_rows

pytestmark = pytest.mark.django_db


def test_publishing_without_the_publisher_role_is_audited_once(editor):
    prompt = make_prompt("greet")
    with pytest.raises(PublishPermissionDenied) as caught:
        services.publish(prompt, acting_user=editor, note="ship", labels=("staging",))
    [row] = refused_rows()
    assert (row.actor, row.entry_key, row.note) == (editor, "greet", caught.value.message)
    assert changes_of(row) == {"attempted": "publish"}


def test_moving_a_protected_label_without_review_and_overriding_without_permission_are_audited(publisher):
    prompt = make_prompt("greet")
    with pytest.raises(ApprovalRequired):
        services.publish(prompt, acting_user=publisher, note="ship")  # production is protected
    with pytest.raises(PublishPermissionDenied):
        services.publish(prompt, acting_user=publisher, note="ship", override_reason="incident")
    assert [changes_of(row)["attempted"] for row in refused_rows()] == ["move_protected", "override"]


def test_approving_ones_own_request_is_audited(publisher):
    prompt = make_prompt("greet")
    review = reviews.request_publication(prompt, acting_user=publisher, note="please", label="production")
    with pytest.raises(SelfApproval):
        reviews.approve(review, acting_user=publisher)
    [row] = refused_rows()
    assert row.actor == publisher and changes_of(row)["attempted"] == "approve_own" and row.entry_key == "greet"


def test_commenting_on_someone_elses_review_is_audited(editor, publisher, db):
    from tests.conftest import make_user

    prompt = make_prompt("greet")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    stranger = make_user("Editors")
    with pytest.raises(PublishPermissionDenied):
        discussion.comment(review, acting_user=stranger, text="me too")
    [row] = refused_rows()
    assert row.actor == stranger and changes_of(row)["attempted"] == "comment"


def test_the_api_writes_one_row_for_a_refusal_the_service_recorded(editor):
    release(make_prompt("greet"))
    response = api_client_for(editor).post("/api/v1/prompts/greet/move-label/",
                                           {"label": "staging", "version": 1, "note": "x"}, format="json")
    assert response.status_code == 403, response.content
    [row] = refused_rows()
    assert row.actor == editor and changes_of(row)["attempted"] == "publish"


def test_the_admin_publish_page_audits_an_editors_post_not_a_visit(client, editor, superuser):
    prompt = make_prompt("greet")
    client_for(client, editor)
    assert client.get(url("prompt_publish", prompt.pk)).status_code == 403
    assert refused_rows() == []
    assert client.post(url("prompt_publish", prompt.pk), {"note": "ship it"}).status_code == 403
    [row] = refused_rows()
    assert row.actor == editor and changes_of(row)["attempted"] == "publish"
    page = client_for(client, superuser).get(url("auditentry_changelist")).content.decode()
    assert "Refused: tried to publish, move a label or roll back." in page


@pytest.mark.parametrize("page, form", [
    ("label", {"label": "staging", "version": "1", "note": "x"}),
    ("rollout", {"label": "staging", "version": "1", "percent": "10", "note": "x"}),
])
def test_the_admin_label_and_rollout_pages_audit_an_editors_post_not_a_visit(client, editor, page, form):
    prompt = make_prompt("greet")
    release(prompt, labels=("staging",))
    client_for(client, editor)
    visit = client.get(url(f"prompt_{page}", prompt.pk), {"label": "staging", "version": "1"})
    assert refused_rows() == []  # opening the page tries nothing
    response = client.post(url(f"prompt_{page}", prompt.pk), form)
    assert response.status_code == 403 and visit.status_code in (200, 403)
    [row] = refused_rows()
    assert row.actor == editor and changes_of(row)["attempted"] == "publish"


def test_publish_selected_refuses_an_outsider_publisher_with_the_team_and_audits_each_attempt(
        client, team, publisher):
    inside = make_prompt("inside", folder="support")
    client_for(client, publisher)
    picked = {"action": "publish_selected", "_selected_action": [inside.pk]}
    shown = client.post(url("prompt_changelist"), picked, follow=True).content.decode()
    assert "Support team" in shown and not inside.versions.exists()
    [row] = refused_rows()  # choosing the action is the attempt, as for "delete selected"
    assert row.actor == publisher and changes_of(row)["attempted"] == "decide"
    client.post(url("prompt_changelist"), {**picked, "confirm": "1", "note": "ship"}, follow=True)  # forged
    assert not inside.versions.exists() and len(refused_rows()) == 2


def test_the_restore_page_tells_an_outsider_whose_folder_it_is_and_audits_the_post(client, team, editor):
    prompt = make_prompt("inside", folder="support")
    release(prompt, labels=("staging",))
    client_for(client, editor)
    visit = client.get(url("prompt_restore", prompt.pk), {"version": "1"})
    assert visit.status_code == 403 and "belongs to the team" in visit.content.decode()
    assert refused_rows() == []
    assert client.post(url("prompt_restore", prompt.pk), {"version": "1"}).status_code == 403
    [row] = refused_rows()
    assert row.actor == editor and changes_of(row)["attempted"] == "restore"


def test_archive_selected_archives_what_the_publisher_may_and_refuses_another_teams_entry(client, team, publisher):
    inside, outside = make_prompt("inside", folder="support"), make_prompt("outside", folder="sales")
    release(inside, labels=("staging",))
    release(outside, labels=("staging",))
    response = client_for(client, publisher).post(url("prompt_changelist"), {
        "action": "archive_selected", "_selected_action": [inside.pk, outside.pk]}, follow=True)
    page = response.content.decode()
    assert "Support team" in page and "Archived 1 prompt." in page
    inside.refresh_from_db()
    outside.refresh_from_db()
    assert inside.archived_at is None and outside.archived_at is not None
    [row] = refused_rows()
    assert row.entry_key == "inside" and row.actor == publisher


def test_an_allowed_publish_writes_no_refusal(release_manager):
    services.publish(make_prompt("greet"), acting_user=release_manager, note="ship", override_reason="incident")
    assert not AuditEntry.objects.filter(action=AuditAction.REFUSED).exists()


def test_rejecting_ones_own_request_is_audited_as_such(publisher):
    review = reviews.request_publication(make_prompt("greet"), acting_user=publisher, note="please",
                                         label="production")
    with pytest.raises(SelfApproval):
        reviews.reject(review, acting_user=publisher, comment="never mind")
    [row] = refused_rows()
    assert changes_of(row)["attempted"] == "reject_own"


def test_changing_a_folders_owner_without_the_permission_is_audited(editor):
    from registry.authoring import ownership

    with pytest.raises(PublishPermissionDenied):
        ownership.set_folder_owner("support", None, acting_user=editor)
    [row] = refused_rows()
    assert (row.actor, row.entry_kind, row.entry_key) == (editor, "folder", "support")
    assert changes_of(row)["attempted"] == "own_folder"


@pytest.mark.parametrize("bulk", [True, False])
def test_an_import_publish_refused_by_role_is_audited_though_the_import_rolled_back(tmp_path, editor, bulk):
    from registry.portable.importer import ImportFailed, import_documents

    path = tmp_path / "registry.yaml"
    path.write_text("prompts:\n  - name: greet\n    labels: [staging]\n    description: new\n"
                    "    messages:\n      - {role: user, text: Hello}\n")
    with pytest.raises(ImportFailed):
        import_documents(path, publish=True, note="ship", acting_user=editor, bulk=bulk)
    [row] = refused_rows()
    assert row.actor == editor and row.entry_key == "greet" and changes_of(row)["attempted"] == "publish"
