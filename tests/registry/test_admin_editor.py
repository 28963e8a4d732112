"""The editor's view of the admin: previewing unsaved edits, state badges, message errors, releases."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from registry.models import AuditEntry, Prompt, Resource, ResourceTemplate, ReviewRequest, Rollout
from registry.release import reviews, rollouts
from tests.factories import make_prompt, make_resource, make_template, release
from tests.registry.test_admin import client_for, edit_first_message, prompt_post, row_counts, url

pytestmark = pytest.mark.django_db


def _preview_json(response) -> dict:
    return json.loads(response.context["result_json"])


# ------------------------------------------------------------------------------ unsaved preview


def test_preview_of_edits_renders_the_unsaved_form_and_saves_nothing(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt, description="Edited, not saved")
    data["messages-0-text"] = "Unsaved text about {{ topic }}."
    data.update({"preview": "1", "arg-topic": "tea"})
    before = row_counts()
    response = client.post(url("prompt_preview_edits", prompt.pk), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200
    result = _preview_json(response)
    assert result["messages"] == [{"role": "user", "content": {"type": "text", "text": "Unsaved text about tea."}}]
    assert result["description"] == "Edited, not saved"
    assert b"Unsaved text about tea." in response.content
    assert row_counts() == before
    prompt.refresh_from_db()
    assert prompt.description == "A prompt for tests"
    assert prompt.messages.get().text == "Tell me about {{ topic }}."


def test_preview_of_edits_uses_new_unsaved_arguments_and_messages(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt, arguments=[
        {"id": prompt.arguments.get().pk, "name": "topic", "required": True, "position": 0},
        {"name": "tone", "default": "calm", "position": 1},
    ], messages=[
        {"id": prompt.messages.get().pk, "role": "user", "kind": "text", "text": "About {{ topic }}.", "position": 0},
        {"role": "assistant", "kind": "text", "text": "In a {{ tone }} voice.", "position": 1},
    ])
    before = row_counts()
    response = client.post(url("prompt_preview_edits", prompt.pk), data)
    assert response.status_code == 200
    # Before any sample value is typed the defaults are used; a required one without default is asked for.
    assert "Fill in the required argument(s): topic." in response.context["hint"]
    data.update({"preview": "1", "arg-topic": "rain"})
    result = _preview_json(client.post(url("prompt_preview_edits", prompt.pk), data))
    assert [m["content"]["text"] for m in result["messages"]] == ["About rain.", "In a calm voice."]
    assert row_counts() == before


def test_preview_of_an_invalid_form_lists_the_problems_and_saves_nothing(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt)
    data["messages-0-text"] = "Hello {{ custmer }}"
    before = row_counts()
    response = client.post(url("prompt_preview_edits", prompt.pk), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200
    assert "custmer" in " ".join(response.context["errors"])
    assert "result_json" not in response.context
    assert row_counts() == before


def test_preview_of_edits_refuses_get(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    assert client.get(url("prompt_preview_edits", prompt.pk)).status_code == 405


def test_change_page_has_the_preview_panel_and_the_unsaved_edits_script(client, editor):
    prompt = make_prompt("greet")
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "data-registry-preview-button" in page
    assert url("prompt_preview_edits", prompt.pk) in page
    assert "registry/change_form.js" in page
    assert "<script>" not in page.split("registry/change_form.js")[1].split("</form>")[0]


def test_preview_without_javascript_opens_a_page_that_carries_the_edits(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt)
    data["messages-0-text"] = "Carried {{ topic }}"
    response = client.post(url("prompt_preview_edits", prompt.pk), data)
    page = response.content.decode()
    assert 'name="messages-0-text" value="Carried {{ topic }}"' in page
    assert AuditEntry.objects.count() == 0
    assert Prompt.objects.get().messages.get().text == "Tell me about {{ topic }}."


# ----------------------------------------------------------------------------------------- badges


def _state_setup():
    """A prompt whose v1 production serves, v2 on staging, a changed draft and a pending request."""
    prompt = make_prompt("stateful")
    release(prompt, note="v1")
    edit_first_message(prompt, "Second about {{ topic }}.")
    release(prompt, note="v2", labels=("staging",))
    return prompt


def test_change_list_shows_draft_changed_review_rollout_and_staging_badges(client, editor, publisher):
    prompt = _state_setup()
    rollouts.set_rollout(prompt, label="production", version_number=2, percent=25, acting_user=None,
                         note="try")
    edit_first_message(prompt, "Third about {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    page = client_for(client, editor).get(url("prompt_changelist")).content.decode()
    assert "draft changed since v2" in page
    assert f"in review #{review.pk} (production)" in page
    assert "rolling out v2 to 25%</" in page
    assert "staging ahead of production" in page


def test_change_page_shows_badges_and_warns_that_saving_makes_the_request_stale(client, editor):
    prompt = _state_setup()
    edit_first_message(prompt, "Unpublished wording about {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    assert review.version_number is None  # the draft itself is asked for
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert f"in review #{review.pk} (production)" in page
    assert f"Review request #{review.pk} asks a publisher to release this draft" in page
    assert "becomes stale" in page


def test_a_request_whose_draft_changed_is_shown_stale(client, editor):
    prompt = _state_setup()
    edit_first_message(prompt, "Unpublished wording about {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    edit_first_message(prompt, "Changed after the request {{ topic }}.")
    page = client_for(client, editor).get(url("prompt_changelist")).content.decode()
    assert f"review #{review.pk} (production) is stale: the draft changed" in page


def test_an_entry_served_as_saved_has_no_badge(client, editor):
    prompt = make_prompt("calm")
    release(prompt, note="v1")
    page = client_for(client, editor).get(url("prompt_changelist")).content.decode()
    assert "registry-badge-" not in page


def test_publisher_home_lists_requests_waiting_for_their_review(client, editor, publisher, second_publisher):
    prompt = _state_setup()
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    own = reviews.request_publication(prompt, acting_user=publisher, note="mine", label="staging",
                                      version_number=1)
    page = client_for(client, publisher).get(reverse("admin:index")).content.decode()
    assert "Waiting for your review (1)" in page
    assert url("reviewrequest_change", review.pk) in page
    assert f'href="{url("reviewrequest_change", own.pk)}">#{own.pk}</a></td><td>' not in page  # not their own
    editor_page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    assert "Waiting for your review" not in editor_page


def test_editor_home_shows_what_became_of_their_requests(client, editor, publisher, second_publisher):
    prompt = _state_setup()
    rejected = reviews.request_publication(prompt, acting_user=editor, note="first try", label="production")
    reviews.reject(rejected, acting_user=publisher, comment="Too informal for customers")
    approved = reviews.request_publication(prompt, acting_user=editor, note="staging", label="staging",
                                           version_number=1)
    reviews.approve(approved, acting_user=second_publisher)
    edit_first_message(prompt, "Unpublished wording about {{ topic }}.")
    pending = reviews.request_publication(prompt, acting_user=editor, note="again", label="production")
    edit_first_message(prompt, "Edited after asking {{ topic }}.")
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    assert f"#{rejected.pk}</a>" in page and f"rejected by {publisher.username}" in page
    assert "Too informal for customers" in page
    assert f"approved by {second_publisher.username}: v1 is served" in page
    assert f"#{pending.pk}</a>" in page and "stale: the draft changed after the request" in page


def test_publisher_home_announces_an_incident_rollback_by_another_publisher(client, editor, publisher,
                                                                            second_publisher):
    from registry.release import services

    prompt = make_prompt("hotline")
    release(prompt, note="v1")
    edit_first_message(prompt, "Second take on {{ topic }}.")
    release(prompt, note="v2")
    services.rollback(prompt, acting_user=publisher, note="v2 gives wrong refund amounts", to_version=1)
    page = client_for(client, second_publisher).get(reverse("admin:index")).content.decode()
    assert 'id="registry-incidents"' in page
    notice = page[page.index('id="registry-incidents"'):page.index("</table>", page.index('id="registry-incidents"'))]
    assert publisher.username in notice and "hotline" in notice and "production" in notice
    assert "v2 → v1" in notice and "v2 gives wrong refund amounts" in notice
    assert url("prompt_history", prompt.pk) in notice
    editor_page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    assert "registry-incidents" not in editor_page  # a notice for publishers


def test_an_ordinary_rollback_is_no_incident_notice(client, publisher, second_publisher):
    from registry.release import services

    prompt = make_prompt("quiet")
    release(prompt, note="v1", labels=["staging"])
    edit_first_message(prompt, "Second take on {{ topic }}.")
    release(prompt, note="v2", labels=["staging"])
    services.rollback(prompt, acting_user=publisher, note="back", label="staging", to_version=1)
    page = client_for(client, second_publisher).get(reverse("admin:index")).content.decode()
    assert "registry-incidents" not in page


# --------------------------------------------------------------------------------------- messages


def test_each_unknown_placeholder_is_shown_at_its_message_with_line_and_suggestion(client, editor):
    prompt = make_prompt("support", arguments=[{"name": "customer_name", "required": True}], messages=[
        {"role": "user", "kind": "text", "text": "Hello {{ customer_name }}"},
        {"role": "assistant", "kind": "text", "text": "Noted"},
    ])
    data = prompt_post(prompt)
    data["messages-0-text"] = "Hello {{ customer_name }}\r\nBroken {{ topic"
    data["messages-1-text"] = "First line\r\nDear {{ customer }},\r\nabout {{ zzz }}"
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    formset = response.context["inline_admin_formsets"][1].formset
    # Both messages' problems in one pass: the syntax error of the first, the unknown names of the second.
    assert "never closed" in " ".join(formset.forms[0].errors["text"])
    second = " ".join(formset.forms[1].errors["text"])
    assert "Line 2: {{ customer }} is not a declared argument. Did you mean <code>customer_name</code>?" in second
    assert "Line 3: {{ zzz }} is not a declared argument." in second
    assert "Did you mean" not in second.split("zzz")[1]
    assert not formset.non_form_errors()
    assert prompt.messages.get(position=1).text == "Noted"


def test_text_typed_with_crlf_is_stored_and_served_with_lf(client, editor):
    prompt = make_prompt("lines")
    data = prompt_post(prompt, description="One\r\nTwo")
    data["messages-0-text"] = "Line one\r\n\r\nLine two about {{ topic }}"
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302
    prompt.refresh_from_db()
    assert prompt.description == "One\nTwo"
    assert prompt.messages.get().text == "Line one\n\nLine two about {{ topic }}"


def test_drafts_applied_from_data_store_lf(editor):
    from registry.authoring import drafts

    prompt = make_prompt("applied")
    drafts.apply_prompt(prompt, {"description": "a\r\nb", "messages": [
        {"role": "user", "kind": "text", "text": "x\r\ny\rz {{ topic }}"}]})
    resource = drafts.apply_resource(make_resource("docs://crlf"), {"text": "r1\r\nr2"})
    template = drafts.apply_template(make_template(), {"body": "b1\r\nb2 {{ id }}"})
    assert prompt.description == "a\nb"
    assert prompt.messages.get().text == "x\ny\nz {{ topic }}"
    assert Resource.objects.get(pk=resource.pk).text == "r1\nr2"
    assert ResourceTemplate.objects.get(pk=template.pk).body == "b1\nb2 {{ id }}"


def test_role_field_explains_there_is_no_system_role(client, editor):
    prompt = make_prompt("roles")
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "there is no “system” role" in page
    assert "at the start of the first user message" in page


def test_message_fieldsets_are_marked_for_content_kind_toggling(client, editor):
    prompt = make_prompt("kinds")
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "registry-kind-file" in page and "registry-kind-uri" in page
    assert "registry/change_form.js" in page


# --------------------------------------------------------------------------------------- releases


def test_roll_back_is_offered_only_when_there_is_an_older_version(client, publisher):
    prompt = make_prompt("once")
    release(prompt, note="v1")
    client_for(client, publisher)
    assert "Roll back production" not in client.get(url("prompt_change", prompt.pk)).content.decode()
    assert "Roll back production" not in client.get(url("prompt_history", prompt.pk)).content.decode()
    edit_first_message(prompt, "Second {{ topic }}")
    release(prompt, note="v2")
    assert "Roll back production" in client.get(url("prompt_change", prompt.pk)).content.decode()
    assert "Roll back production" in client.get(url("prompt_history", prompt.pk)).content.decode()


def test_header_buttons_are_grouped_in_view_and_release_menus(client, publisher):
    prompt = make_prompt("menus")
    release(prompt, note="v1")
    page = client_for(client, publisher).get(url("prompt_change", prompt.pk)).content.decode()
    tools = page.split('class="object-tools"')[1].split("</ul>\n")[0]
    view_menu, release_menu = tools.split("Release ▾")
    assert "View ▾" in view_menu and "Preview saved draft" in view_menu and "History" in view_menu
    assert "Publish…" in release_menu and "Rollout…" in release_menu


def test_approve_is_the_primary_button_and_reject_a_danger_button(client, editor, publisher):
    prompt = make_prompt("decide")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    page = client_for(client, publisher).get(url("reviewrequest_change", review.pk)).content.decode()
    assert 'class="button default registry-approve" name="decision" value="approve"' in page
    assert 'class="button registry-danger" name="decision" value="reject"' in page


def test_bulk_approve_approves_each_request_and_reports_each(client, editor, publisher, second_publisher):
    first, second = make_prompt("bulk-one"), make_prompt("bulk-two")
    ok = reviews.request_publication(first, acting_user=editor, note="one", label="production")
    stale = reviews.request_publication(second, acting_user=editor, note="two", label="production")
    own = reviews.request_publication(first, acting_user=publisher, note="mine", label="staging")
    edit_first_message(second, "Changed after asking {{ topic }}")
    response = client_for(client, publisher).post(url("reviewrequest_changelist"), {
        "action": "approve_selected", "_selected_action": [ok.pk, stale.pk, own.pk]}, follow=True)
    shown = [str(m) for m in response.context["messages"]]
    assert any(f"Approved review #{ok.pk}" in m for m in shown)
    assert any(f"Review #{stale.pk} was not approved" in m and "stale" in m for m in shown)
    assert any(f"Review #{own.pk} was not approved" in m and "another publisher" in m for m in shown)
    statuses = dict(ReviewRequest.objects.values_list("pk", "status"))
    assert statuses == {ok.pk: "approved", stale.pk: "pending", own.pk: "pending"}
    assert first.labels.get(name="production").version.number == 1


def test_editors_have_no_bulk_approve(client, editor):
    page = client_for(client, editor).get(url("reviewrequest_changelist")).content.decode()
    assert "approve_selected" not in page


def test_history_starts_a_rollout_of_a_version_with_a_label_chosen_from_a_list(client, publisher):
    prompt = make_prompt("roll")
    release(prompt, note="v1", labels=("production", "staging"))
    edit_first_message(prompt, "Second {{ topic }}")
    release(prompt, note="better wording", labels=())
    client_for(client, publisher)
    page = client.get(url("prompt_history", prompt.pk)).content.decode()
    assert "Roll v2 out" in page and '<option value="staging">staging (serves v1)</option>' in page
    response = client.post(url("prompt_rollout", prompt.pk), {"label": "staging", "version": "2", "percent": "10",
                                                             "note": "try"})
    assert response.status_code == 302
    rollout = Rollout.objects.get()
    assert (rollout.label, rollout.candidate_version, rollout.percent) == ("staging", 2, 10)
    typo = client.post(url("prompt_rollout", prompt.pk), {"label": "stagign", "version": "2", "percent": "20"})
    assert typo.status_code == 200 and "Choose one of the entry&#x27;s labels." in typo.content.decode()
    assert Rollout.objects.get().percent == 10
    form = client.get(url("prompt_rollout", prompt.pk)).content.decode()
    assert '<option value="2" selected>v2 — better wording</option>' in form


# ------------------------------------------------------------------------------------------- home


def _home_models(client, user) -> set[str]:
    response = client_for(client, user).get(reverse("admin:index"))
    return {model["object_name"] for app in response.context["app_list"] for model in app["models"]}


def test_editor_home_lists_only_what_editors_work_on(client, editor):
    assert _home_models(client, editor) == {"Prompt", "Resource", "ResourceTemplate", "Snippet", "ReviewRequest"}


def test_publisher_and_auditor_homes_keep_the_internals(client, publisher, auditor):
    internals = {"PromptVersion", "PromptLabel", "FetchCounter", "Rollout"}
    assert internals <= _home_models(client, publisher)
    assert internals | {"AuditEntry"} <= _home_models(client, auditor)


def test_internal_pages_stay_reachable_by_link_for_editors(client, editor):
    client_for(client, editor)
    assert client.get(url("promptversion_changelist")).status_code == 200


def test_audit_list_gives_notes_room_from_a_static_stylesheet(client, auditor):
    page = client_for(client, auditor).get(url("auditentry_changelist")).content.decode()
    assert "registry/audit.css" in page
    from django.contrib.staticfiles import finders

    with open(finders.find("registry/audit.css")) as stylesheet:
        css = stylesheet.read()
    assert "td.field-note" in css and "min-width" in css
