"""The admin as editors, publishers and auditors use it, driven through the test client."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from django.apps import apps
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from registry.authoring import drafts
from registry.errors import ReviewClosed
from registry.formats import buckets
from registry.models import (
    AuditAction,
    AuditEntry,
    FetchCounter,
    McpClient,
    Prompt,
    PromptLabel,
    PromptMessage,
    PromptVersion,
    Resource,
    ResourceTemplate,
    ReviewRequest,
    Rollout,
)
from registry.release import reviews, rollouts, services
from registry.serving.clients import hash_token
from tests.factories import PNG_1X1, make_prompt, make_resource, make_template, make_user, release

pytestmark = pytest.mark.django_db


def url(name: str, *args: Any) -> str:
    return reverse(f"admin:registry_{name}", args=args)


def client_for(client, user):
    client.force_login(user)
    return client


def prompt_post(prompt: Prompt | None = None, *, arguments=None, messages=None, **fields) -> dict[str, Any]:
    """The POST body of the prompt change form: the prompt's current rows unless overridden.

    `arguments` / `messages` are lists of dicts; an existing row is kept by passing its "id".
    A row's "position" is given as stored (0 for the first) and posted as the page shows it (1).
    """
    data: dict[str, Any] = {
        "name": prompt.name if prompt else "new-prompt",
        "title": prompt.title if prompt else "",
        "description": prompt.description if prompt else "Says hello",
        "tags": prompt.tags if prompt else "",
        "_save": "Save",
    }
    data.update(fields)
    if arguments is None:
        arguments = [
            {"id": a.pk, "name": a.name, "title": a.title, "description": a.description, "required": a.required,
             "default": a.default, "suggestions": a.suggestions, "position": a.position}
            for a in (prompt.arguments.all() if prompt else [])
        ]
    if messages is None:
        messages = [
            {"id": m.pk, "role": m.role, "kind": m.kind, "text": m.text, "uri": m.uri, "mime_type": m.mime_type,
             "link_name": m.link_name, "position": m.position}
            for m in (prompt.messages.all() if prompt else [])
        ]
    initial_args = sum(1 for a in arguments if a.get("id"))
    initial_msgs = sum(1 for m in messages if m.get("id"))
    for prefix, rows, initial in (("arguments", arguments, initial_args), ("messages", messages, initial_msgs)):
        data[f"{prefix}-TOTAL_FORMS"] = len(rows)
        data[f"{prefix}-INITIAL_FORMS"] = initial
        data[f"{prefix}-MIN_NUM_FORMS"] = 0
        data[f"{prefix}-MAX_NUM_FORMS"] = 1000
        for i, row in enumerate(rows):
            for key, value in row.items():
                if key == "required":
                    if value:
                        data[f"{prefix}-{i}-required"] = "on"
                    continue
                if key == "position" and value is not None:
                    value += 1
                data[f"{prefix}-{i}-{key}"] = "" if value is None else value
            if prompt is not None:
                data[f"{prefix}-{i}-prompt"] = prompt.pk
    return data


def published_prompt(publisher, **kwargs) -> Prompt:
    """A prompt whose v1 production serves (released by the operator: production is protected)."""
    prompt = make_prompt(**kwargs)
    release(prompt, note="first release")
    return prompt


def edit_first_message(prompt: Prompt, text: str) -> None:
    message = prompt.messages.first()
    message.text = text
    message.save()


def row_counts() -> dict[str, int]:
    return {model._meta.label: model._default_manager.count() for model in apps.get_models()}


def form_errors(response) -> str:
    """All error text shown on a re-displayed change form."""
    parts = [str(response.context["adminform"].form.errors)]
    for formset in response.context["inline_admin_formsets"]:
        parts.append(str(formset.formset.errors))
        parts.append(" ".join(formset.formset.non_form_errors()))
    return " ".join(parts)


# ------------------------------------------------------------------------------------- site


def test_admin_site_is_titled_mcp_registry(client, editor):
    response = client_for(client, editor).get(reverse("admin:index"))
    assert response.status_code == 200
    assert "MCP Registry" in response.text


# --------------------------------------------------------------------------- drafts & audit


def test_editor_creates_a_draft_prompt_and_the_creation_is_audited(client, editor):
    data = prompt_post(
        name="greet",
        arguments=[{"name": "who", "required": True, "position": 0}],
        messages=[{"role": "user", "kind": "text", "text": "Say hello to {{ who }}.", "position": 0}],
    )
    response = client_for(client, editor).post(url("prompt_add"), data)
    assert response.status_code == 302, form_errors(response)
    prompt = Prompt.objects.get(name="greet")
    assert [a.name for a in prompt.arguments.all()] == ["who"]
    assert prompt.messages.get().text == "Say hello to {{ who }}."
    entry = AuditEntry.objects.get(entry_kind="prompt", entry_id=prompt.pk)
    assert entry.action == "create"
    assert entry.actor == editor
    assert {"field": "messages[1].content.text", "before": None, "after": "Say hello to {{ who }}."} in entry.changes
    assert not PromptVersion.objects.exists()


def test_editor_edits_a_message_and_the_audit_entry_has_the_field_diff(client, editor):
    prompt = make_prompt(name="explain")
    data = prompt_post(prompt)
    data["messages-0-text"] = "Explain {{ topic }} simply."
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302, form_errors(response)
    assert prompt.messages.get().text == "Explain {{ topic }} simply."
    entry = AuditEntry.objects.get(entry_id=prompt.pk, action="edit")
    assert entry.actor_name == editor.username
    assert entry.changes == [
        {"field": "messages[1].content.text", "before": "Tell me about {{ topic }}.",
         "after": "Explain {{ topic }} simply."}
    ]


def test_an_admin_tag_edit_is_audited_and_serves_nothing_until_published(client, editor):
    prompt = make_prompt(name="explain", tags="public")
    services.publish(prompt, acting_user=None, note="v1")
    data = prompt_post(prompt)
    data["tags"] = "internal"
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302, form_errors(response)
    entry = AuditEntry.objects.get(entry_id=prompt.pk, action="edit")
    assert entry.changes == [{"field": "tags", "before": ["public"], "after": ["internal"]}]
    assert prompt.versions.get().snapshot["tags"] == ["public"]  # what clients are served is unchanged


def test_a_second_editor_saving_an_old_form_is_refused_and_loses_nothing(client, editor):
    """Two editors opened the same change form; the second save must not silently revert the first."""
    prompt = make_prompt(name="explain")
    opened = prompt_post(prompt, draft_revision=prompt.revision)  # both forms carry the revision they opened
    first = dict(opened, description="First editor's words")
    assert client_for(client, editor).post(url("prompt_change", prompt.pk), first).status_code == 302

    other = make_user("Editors", username="second-editor")
    second = dict(opened, title="Second editor's title")
    response = client_for(client, other).post(url("prompt_change", prompt.pk), second)

    assert response.status_code == 200  # re-displayed, not saved
    errors = " ".join(response.context["adminform"].form.non_field_errors())
    assert f"changed by {editor.username}" in errors
    assert "Second editor&#x27;s title" in response.text or "Second editor's title" in response.text  # kept
    prompt.refresh_from_db()
    assert (prompt.title, prompt.description) == ("", "First editor's words")
    # Having seen the warning, saving the re-displayed form again replaces the draft deliberately.
    again = dict(second, draft_revision=response.context["adminform"].form["draft_revision"].value())
    assert client_for(client, other).post(url("prompt_change", prompt.pk), again).status_code == 302
    prompt.refresh_from_db()
    assert prompt.title == "Second editor's title"


def test_saving_an_unchanged_draft_writes_no_audit_entry(client, editor):
    prompt = make_prompt()
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), prompt_post(prompt))
    assert response.status_code == 302, form_errors(response)
    assert not AuditEntry.objects.exists()


def test_template_syntax_error_is_shown_next_to_the_text_with_its_line(client, editor):
    prompt = make_prompt()
    data = prompt_post(prompt)
    data["messages-0-text"] = "First line\nSecond {{ topic\nthird"
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    formset = response.context["inline_admin_formsets"][1].formset
    assert "Line 2" in " ".join(formset.forms[0].errors["text"])
    assert "never closed" in " ".join(formset.forms[0].errors["text"])
    assert prompt.messages.get().text == "Tell me about {{ topic }}."
    assert not AuditEntry.objects.exists()


def test_placeholder_that_is_not_a_declared_argument_is_rejected(client, editor):
    prompt = make_prompt()
    data = prompt_post(prompt)
    data["messages-0-text"] = "Tell me about {{ topic }} for {{ audience }}."
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    errors = " ".join(response.context["inline_admin_formsets"][1].formset.forms[0].errors["text"])
    assert "{{ audience }} is not a declared argument" in errors
    assert "audience" not in prompt.messages.get().text


def test_declared_but_unused_argument_warns_and_still_saves(client, editor):
    prompt = make_prompt()
    data = prompt_post(prompt)
    data["arguments-TOTAL_FORMS"] = 2
    data.update({"arguments-1-name": "tone", "arguments-1-position": 2, "arguments-1-prompt": prompt.pk})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data, follow=True)
    assert response.status_code == 200
    assert sorted(a.name for a in prompt.arguments.all()) == ["tone", "topic"]
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    assert any("'tone' is declared but never used" in w for w in warnings)


def test_duplicate_argument_names_are_rejected_in_plain_words(client, editor):
    prompt = make_prompt()
    data = prompt_post(prompt)
    data["arguments-TOTAL_FORMS"] = 2
    data.update({"arguments-1-name": "topic", "arguments-1-position": 2, "arguments-1-prompt": prompt.pk})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    errors = " ".join(response.context["inline_admin_formsets"][0].formset.non_form_errors())
    assert "The argument name 'topic' is used 2 times" in errors
    assert prompt.arguments.count() == 1


def test_invalid_resource_link_uri_is_rejected_next_to_the_uri(client, editor):
    prompt = make_prompt(arguments=[], messages=[{"kind": "text", "text": "Hi"}])
    data = prompt_post(prompt)
    data["messages-TOTAL_FORMS"] = 2
    data.update({"messages-1-role": "user", "messages-1-kind": "resource_link", "messages-1-uri": "no scheme here",
                 "messages-1-position": 2, "messages-1-prompt": prompt.pk})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    errors = response.context["inline_admin_formsets"][1].formset.forms[1].errors
    assert "must start with a scheme" in str(errors["uri"])


def test_image_upload_fills_the_binary_data_and_shows_a_thumbnail(client, editor):
    prompt = make_prompt(arguments=[], messages=[{"kind": "text", "text": "Look at this:"}])
    data = prompt_post(prompt)
    data["messages-TOTAL_FORMS"] = 2
    data.update({"messages-1-role": "user", "messages-1-kind": "image", "messages-1-position": 2,
                 "messages-1-prompt": prompt.pk,
                 "messages-1-upload": SimpleUploadedFile("dot.png", PNG_1X1, content_type="image/png")})
    client_for(client, editor)
    response = client.post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302, form_errors(response)
    image = prompt.messages.get(kind="image")
    assert bytes(image.data) == PNG_1X1
    assert image.mime_type == "image/png"
    page = client.get(url("prompt_change", prompt.pk))
    assert 'alt="thumbnail"' in page.text and "data:image/png;base64," in page.text


def test_upload_over_the_size_limit_is_rejected(client, editor, settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_UPLOAD_BYTES": 10}
    prompt = make_prompt(arguments=[], messages=[{"kind": "text", "text": "Look:"}])
    data = prompt_post(prompt)
    data["messages-TOTAL_FORMS"] = 2
    data.update({"messages-1-role": "user", "messages-1-kind": "image", "messages-1-position": 2,
                 "messages-1-prompt": prompt.pk,
                 "messages-1-upload": SimpleUploadedFile("big.png", PNG_1X1, content_type="image/png")})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    errors = str(response.context["inline_admin_formsets"][1].formset.forms[1].errors["upload"])
    assert "the limit is 10 bytes" in errors
    assert not prompt.messages.filter(kind="image").exists()


def test_name_becomes_read_only_once_published(client, editor, publisher):
    prompt = published_prompt(publisher, name="stable-name")
    data = prompt_post(prompt, name="renamed")
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302, form_errors(response)
    prompt.refresh_from_db()
    assert prompt.name == "stable-name"
    page = client.get(url("prompt_change", prompt.pk))
    assert 'name="name"' not in page.text


# ------------------------------------------------------------------------------------ deleting


def test_published_prompt_cannot_be_deleted_and_the_message_suggests_archive(client, publisher):
    prompt = published_prompt(publisher)
    client_for(client, make_user(None))
    response = client.post(url("prompt_delete", prompt.pk), {"post": "yes"}, follow=True)
    assert Prompt.objects.filter(pk=prompt.pk).exists()
    errors = [str(m) for m in response.context["messages"]]
    assert any("cannot be deleted" in e and "Archive" in e for e in errors)
    assert not AuditEntry.objects.filter(action="delete").exists()


def test_bulk_delete_leaves_published_prompts_alone(client, publisher):
    prompt = published_prompt(publisher)
    client_for(client, make_user(None))
    response = client.post(url("prompt_changelist"),
                           {"action": "delete_selected", "_selected_action": [prompt.pk], "post": "yes"})
    assert response.status_code == 200  # the stock page refuses: protected objects
    assert Prompt.objects.filter(pk=prompt.pk).exists()
    assert not AuditEntry.objects.filter(action="delete").exists()


def test_deleting_an_unpublished_draft_is_audited(client, editor):
    prompt = make_prompt(name="scratch")
    response = client_for(client, editor).post(url("prompt_delete", prompt.pk), {"post": "yes"})
    assert response.status_code == 302
    assert not Prompt.objects.filter(name="scratch").exists()
    entry = AuditEntry.objects.get(action="delete")
    assert (entry.entry_key, entry.actor) == ("scratch", editor)
    assert any(c["field"] == "name" and c["before"] == "scratch" for c in entry.changes)


def test_bulk_deleting_unpublished_drafts_audits_each(client, editor):
    first, second = make_prompt(), make_prompt()
    response = client_for(client, editor).post(
        url("prompt_changelist"),
        {"action": "delete_selected", "_selected_action": [first.pk, second.pk], "post": "yes"},
    )
    assert response.status_code == 302
    assert not Prompt.objects.exists()
    assert sorted(AuditEntry.objects.filter(action="delete").values_list("entry_key", flat=True)) == sorted(
        [first.name, second.name]
    )


# ------------------------------------------------------------------------------- publishing


def test_editor_sees_no_publish_button_and_publisher_does(client, editor, publisher):
    prompt = make_prompt()
    publish_url = url("prompt_publish", prompt.pk)
    assert publish_url not in client_for(client, editor).get(url("prompt_change", prompt.pk)).text
    assert publish_url in client_for(client, publisher).get(url("prompt_change", prompt.pk)).text


def test_editor_crafted_publish_post_is_forbidden_and_writes_nothing_but_its_refusal(client, editor):
    prompt = make_prompt()
    client_for(client, editor)
    before = row_counts()
    assert client.get(url("prompt_publish", prompt.pk)).status_code == 403
    response = client.post(url("prompt_publish", prompt.pk), {"note": "sneaky", "labels": ["production"]})
    assert response.status_code == 403
    assert not PromptVersion.objects.exists()
    assert not PromptLabel.objects.exists()
    after = row_counts()
    assert after.pop("registry.AuditEntry") == before.pop("registry.AuditEntry") + 1  # the refused row
    assert after == before
    assert AuditEntry.objects.get().action == AuditAction.REFUSED


def test_editor_crafted_label_move_is_forbidden(client, editor, publisher):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Second take on {{ topic }}.")
    release(prompt, note="v2")
    audit_before = AuditEntry.objects.count()
    response = client_for(client, editor).post(
        url("prompt_label", prompt.pk), {"label": "production", "version": 1, "note": "roll back please"}
    )
    assert response.status_code == 403
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 2
    # Nothing moved; the attempt itself is on record (registry.refusals).
    assert list(AuditEntry.objects.order_by("pk").values_list("action", flat=True)[audit_before:]) == [
        AuditAction.REFUSED]


def test_editor_cannot_publish_through_the_bulk_action(client, editor):
    prompt = make_prompt()
    client_for(client, editor)
    changelist = client.get(url("prompt_changelist"))
    assert "publish_selected" not in changelist.text
    response = client.post(url("prompt_changelist"), {
        "action": "publish_selected", "_selected_action": [prompt.pk], "confirm": "yes",
        "note": "sneaky", "labels": ["production"],
    })
    assert response.status_code in (200, 302)
    assert not PromptVersion.objects.exists()
    assert not AuditEntry.objects.filter(action="publish").exists()


def test_editor_cannot_archive_through_the_bulk_action(client, editor, publisher):
    prompt = published_prompt(publisher)
    client_for(client, editor).post(url("prompt_changelist"),
                                    {"action": "archive_selected", "_selected_action": [prompt.pk]})
    prompt.refresh_from_db()
    assert prompt.archived_at is None
    assert not AuditEntry.objects.filter(action="archive").exists()


def test_publisher_publishes_version_n_plus_1_and_production_waits_for_a_second_publisher(
        client, publisher, second_publisher):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "A fresh look at {{ topic }}.")
    client_for(client, publisher)
    confirm = client.get(url("prompt_publish", prompt.pk))
    assert confirm.status_code == 200
    assert "A fresh look at" in confirm.text  # the confirmation shows what changes
    assert "protected: needs a review" in confirm.text and "override" not in confirm.text.lower()
    response = client.post(url("prompt_publish", prompt.pk), {"note": "Friendlier wording", "labels": ["production"]},
                           follow=True)
    assert "Review request #" in response.text
    version = PromptVersion.objects.get(entry=prompt, number=2)
    assert version.change_note == "Friendlier wording"
    assert version.author == publisher
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 1  # not yet
    publish = AuditEntry.objects.get(entry_id=prompt.pk, action="publish", to_version=2)
    assert (publish.actor, publish.from_version, publish.note) == (publisher, 1, "Friendlier wording")
    review = ReviewRequest.objects.get(entry_id=prompt.pk)
    assert (review.label, review.version_number, review.requested_by, review.status) == (
        "production", 2, publisher, "pending")
    # The requester sees no Approve button, and a crafted approval is refused.
    page = client.get(url("reviewrequest_change", review.pk))
    assert 'value="approve"' not in page.text and "another publisher" in page.text
    refused = client.post(url("reviewrequest_change", review.pk), {"decision": "approve"})
    assert "another publisher must approve" in refused.text
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 1
    # A second publisher approves: production moves, audited.
    client_for(client, second_publisher)
    page = client.get(url("reviewrequest_change", review.pk))
    assert 'value="approve"' in page.text and "A fresh look at" in page.text
    assert client.post(url("reviewrequest_change", review.pk),
                       {"decision": "approve", "comment": "Reads well"}).status_code == 302
    assert PromptLabel.objects.get(entry=prompt, name="production").version == version
    move = AuditEntry.objects.get(entry_id=prompt.pk, action="label_move", to_version=2)
    assert (move.label, move.actor) == ("production", second_publisher)
    assert AuditEntry.objects.filter(action="review_approved", actor=second_publisher).exists()


def test_publisher_with_the_override_permission_publishes_to_production_at_once(client, release_manager):
    prompt = published_prompt(release_manager)
    edit_first_message(prompt, "Hotfix for {{ topic }}.")
    client_for(client, release_manager)
    assert "Emergency override" in client.get(url("prompt_publish", prompt.pk)).text
    missing_reason = client.post(url("prompt_publish", prompt.pk),
                                 {"note": "hotfix", "labels": ["production"], "override": "on"})
    assert missing_reason.status_code == 200 and "Say why the review is skipped" in missing_reason.text
    response = client.post(url("prompt_publish", prompt.pk), {
        "note": "hotfix", "labels": ["production"], "override": "on", "override_reason": "incident 7"})
    assert response.status_code == 302
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 2
    override = AuditEntry.objects.get(action="override", actor=release_manager)
    assert (override.label, override.note, override.to_version) == ("production", "incident 7", 2)
    assert not ReviewRequest.objects.exists()


def test_editor_requests_publication_from_the_change_page(client, editor, publisher):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Editor's wording for {{ topic }}.")
    client_for(client, editor)
    change = client.get(url("prompt_change", prompt.pk))
    assert "Request publication" in change.text and "registry-publish" not in change.text
    form = client.get(url("prompt_request", prompt.pk))
    assert form.status_code == 200 and "Editor&#x27;s wording" in form.text
    refused = client.post(url("prompt_request", prompt.pk), {"label": "production", "note": " "})
    assert "A note is required" in refused.text
    response = client.post(url("prompt_request", prompt.pk), {"label": "production", "note": "Clearer"})
    review = ReviewRequest.objects.get()
    assert response.status_code == 302 and response["Location"] == url("reviewrequest_change", review.pk)
    assert (review.version_number, review.requested_by, review.note) == (None, editor, "Clearer")
    assert not PromptVersion.objects.filter(number=2).exists()  # approval publishes it
    queue = client.get(url("reviewrequest_changelist"))
    assert queue.status_code == 200 and prompt.name in queue.text
    assert AuditEntry.objects.filter(action="review_requested", actor=editor).exists()


def test_rejecting_in_the_queue_needs_a_comment_and_changes_nothing(client, editor, publisher):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Risky {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="try this")
    client_for(client, publisher)
    refused = client.post(url("reviewrequest_change", review.pk), {"decision": "reject", "comment": ""})
    assert "a comment is required" in refused.text
    client.post(url("reviewrequest_change", review.pk), {"decision": "reject", "comment": "Too risky"})
    review.refresh_from_db()
    assert (review.status, review.decided_by, review.decision_comment) == ("rejected", publisher, "Too risky")
    assert PromptVersion.objects.count() == 1


def test_review_queue_lists_pending_requests_first(client, editor, publisher):
    first, second = published_prompt(publisher), published_prompt(publisher)
    for prompt in (first, second):
        edit_first_message(prompt, "New {{ topic }}.")
    old = reviews.request_publication(first, acting_user=editor, note="one")
    reviews.reject(old, acting_user=publisher, comment="no")
    pending = reviews.request_publication(second, acting_user=editor, note="two")
    queue = client_for(client, publisher).get(url("reviewrequest_changelist"))
    assert [r.pk for r in queue.context["cl"].result_list] == [pending.pk, old.pk]


def test_publish_without_a_change_note_is_refused(client, publisher):
    prompt = make_prompt()
    response = client_for(client, publisher).post(url("prompt_publish", prompt.pk),
                                                  {"note": " ", "labels": ["production"]})
    assert response.status_code == 200
    assert "A change note is required" in response.text
    assert not PromptVersion.objects.exists()


def test_publishing_an_invalid_draft_lists_the_problems(client, publisher):
    prompt = make_prompt(messages=[{"kind": "text", "text": "About {{ subject }}"}])
    response = client_for(client, publisher).post(url("prompt_publish", prompt.pk), {"note": "go"})
    assert response.status_code == 200
    assert "{{ subject }} is not a declared argument" in response.text
    assert not PromptVersion.objects.exists()


def test_publisher_can_publish_selected_drafts_after_confirming(client, publisher):
    first, second = make_prompt(), make_prompt()
    client_for(client, publisher)
    confirm = client.post(url("prompt_changelist"),
                          {"action": "publish_selected", "_selected_action": [first.pk, second.pk]})
    assert confirm.status_code == 200 and "Yes, publish" in confirm.text
    assert not PromptVersion.objects.exists()
    client.post(url("prompt_changelist"), {
        "action": "publish_selected", "_selected_action": [first.pk, second.pk], "confirm": "yes",
        "note": "initial release", "labels": ["production", "staging"],
    })
    assert PromptVersion.objects.filter(number=1).count() == 2
    assert PromptLabel.objects.filter(name="staging").count() == 2
    # production is protected: one review request per prompt instead of a move.
    assert not PromptLabel.objects.filter(name="production").exists()
    assert ReviewRequest.objects.filter(label="production", version_number=1, status="pending").count() == 2


def test_rolling_back_production_files_a_review_or_uses_the_override(client, publisher, release_manager):
    """To a version production never served (v1 went to staging only): not an incident rollback."""
    prompt = make_prompt()
    release(prompt, note="first release", labels=("staging",))
    edit_first_message(prompt, "Version two about {{ topic }}.")
    release(prompt, note="v2")
    client_for(client, publisher)
    confirm = client.get(url("prompt_label", prompt.pk), {"label": "production"})
    assert confirm.status_code == 200 and "roll back" in confirm.text and "is protected" in confirm.text
    refused = client.post(url("prompt_label", prompt.pk), {"label": "production", "version": 1, "note": ""})
    assert refused.status_code == 200 and "a note is required" in refused.text
    response = client.post(url("prompt_label", prompt.pk),
                           {"label": "production", "version": 1, "note": "v2 confused users"})
    assert response.status_code == 302
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 2  # waits for approval
    review = ReviewRequest.objects.get()
    assert (review.version_number, review.base_version, review.note) == (1, 2, "v2 confused users")
    # In an emergency, a release manager rolls back at once with a reason.
    client_for(client, release_manager)
    response = client.post(url("prompt_label", prompt.pk), {
        "label": "production", "version": 1, "note": "v2 confused users", "override_reason": "incident 9"})
    assert response.status_code == 302
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 1
    entry = AuditEntry.objects.get(action="rollback")
    assert (entry.actor, entry.label, entry.from_version, entry.to_version, entry.note) == (
        release_manager, "production", 2, 1, "v2 confused users")
    assert AuditEntry.objects.filter(action="override", actor=release_manager, note="incident 9").exists()
    # The pending review was superseded by the move: approving it is refused.
    with pytest.raises(ReviewClosed):
        reviews.approve(review, acting_user=release_manager)


def test_publisher_moves_a_staging_label_forward(client, publisher):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Staged {{ topic }}.")
    services.publish(prompt, acting_user=publisher, note="v2", labels=[])
    response = client_for(client, publisher).post(url("prompt_label", prompt.pk),
                                                  {"label": "staging", "version": 2, "note": "try it"})
    assert response.status_code == 302
    assert PromptLabel.objects.get(entry=prompt, name="staging").version.number == 2
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 1
    assert AuditEntry.objects.filter(action="label_move", label="staging", to_version=2).exists()


def test_publisher_archives_and_restores_with_actions(client, publisher):
    prompt = published_prompt(publisher)
    client_for(client, publisher)
    client.post(url("prompt_changelist"), {"action": "archive_selected", "_selected_action": [prompt.pk]})
    prompt.refresh_from_db()
    assert prompt.archived_at is not None
    client.post(url("prompt_changelist"), {"action": "unarchive_selected", "_selected_action": [prompt.pk]})
    prompt.refresh_from_db()
    assert prompt.archived_at is None
    assert list(AuditEntry.objects.filter(entry_id=prompt.pk, action__in=["archive", "unarchive"])
                .order_by("id").values_list("action", flat=True)) == ["archive", "unarchive"]


# --------------------------------------------------------------------- preview, diff, history


def test_preview_writes_nothing_and_shows_the_rendered_json(client, editor):
    prompt = make_prompt(arguments=[{"name": "topic", "required": True}])
    client_for(client, editor)
    before = row_counts()
    response = client.get(url("prompt_preview", prompt.pk), {"preview": "1", "arg-topic": "tides"})
    assert response.status_code == 200
    assert row_counts() == before
    assert json.loads(response.context["result_json"]) == {
        "description": "A prompt for tests",
        "messages": [{"role": "user", "content": {"type": "text", "text": "Tell me about tides."}}],
    }
    assert "Tell me about tides." in response.text


def test_preview_prefills_defaults_and_explains_missing_arguments(client, editor):
    prompt = make_prompt(arguments=[
        {"name": "topic", "required": True, "suggestions": "the moon\nthe sea"},
        {"name": "tone", "required": True},
    ], messages=[{"kind": "text", "text": "{{ tone }} words about {{ topic }}"}])
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk))
    assert response.context["form"].fields["topic"].initial == "the moon"
    assert "Fill in the required argument(s): tone." in response.text
    assert "result_json" not in response.context


def test_preview_of_a_draft_with_a_syntax_error_shows_the_problem(client, editor):
    prompt = make_prompt(arguments=[], messages=[{"kind": "text", "text": "oops {% if %}"}])
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk))
    assert response.status_code == 200
    assert "Line 1" in response.context["error"]


def test_diff_between_draft_and_production_shows_the_message_text_word_by_word(client, publisher):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Tell me about {{ topic }}.\nAnd then some more.")
    response = client_for(client, publisher).get(url("prompt_diff", prompt.pk))
    assert response.status_code == 200
    [section] = response.context["diff"].sections
    [message] = section.messages
    assert (section.kind, message.number, message.role.text) == ("messages", 1, "User")
    assert "Tell me about {{ topic }}.<ins>\nAnd then some more.</ins>" in response.text
    assert "difflib" not in response.text and "null" not in response.text


def test_diff_between_two_versions(client, publisher):
    prompt = published_prompt(publisher, description="Old description")
    Prompt.objects.filter(pk=prompt.pk).update(description="New description")
    services.publish(Prompt.objects.get(pk=prompt.pk), acting_user=publisher, note="v2", labels=())
    response = client_for(client, publisher).get(url("prompt_diff", prompt.pk), {"a": "v1", "b": "v2"})
    [section] = response.context["diff"].sections
    [change] = section.fields
    assert (change.label, change.status, change.before.text, change.after.text) == (
        "Description", "changed", "Old description", "New description")
    assert '<td class="rd-before">Old description</td>' in response.text


def test_history_lists_versions_labels_audit_and_fetches(client, publisher, auditor):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Second about {{ topic }}.")
    release(prompt, note="second release")
    from django.utils import timezone

    FetchCounter.objects.create(client_name="support-bot", entry_kind="prompt", entry_key=prompt.name, version=2,
                                label="production", count=7, first_at=timezone.now(), last_at=timezone.now())
    FetchCounter.objects.create(client_name="support-bot", entry_kind="prompt", entry_key=prompt.name, version=1,
                                label="production", count=3, first_at=timezone.now(), last_at=timezone.now())
    client_for(client, auditor)
    response = client.get(url("prompt_history", prompt.pk))
    assert response.status_code == 200
    rows = response.context["rows"]
    assert [(r["version"].number, r["labels"]) for r in rows] == [(2, ["production"]), (1, [])]
    assert "second release" in response.text and "support-bot" in response.text
    [bot] = response.context["by_client"]  # one row per client, every version it was served
    assert (bot.client_name, bot.total, [v["version"] for v in bot.versions]) == ("support-bot", 10, [2, 1])
    assert [(v["version"], v["clients"], v["total"]) for v in response.context["by_version"]] == [(2, 1, 7), (1, 1, 3)]
    assert {e.action for e in response.context["audit_entries"]} >= {"publish", "label_move"}
    assert not response.context["can_publish"]
    assert url("prompt_label", prompt.pk) not in response.text


# -------------------------------------------------------------------- resources & templates


def test_resource_upload_with_text_preview_and_thumbnail(client, editor, publisher):
    resource = make_resource("docs://logo", text="")
    client_for(client, editor)
    data = {"uri": "docs://logo", "name": "logo", "mime_type": "", "text": "", "_save": "Save",
            "upload": SimpleUploadedFile("logo.png", PNG_1X1, content_type="image/png")}
    response = client.post(url("resource_change", resource.pk), data)
    assert response.status_code == 302, response.context and response.context["adminform"].form.errors
    resource.refresh_from_db()
    assert bytes(resource.data) == PNG_1X1 and resource.mime_type == "image/png"
    assert AuditEntry.objects.get(action="edit", entry_kind="resource").changes
    preview = client.get(url("resource_preview", resource.pk))
    assert json.loads(preview.context["result_json"])["contents"][0]["mimeType"] == "image/png"
    assert "data:image/png;base64," in preview.text


def test_resource_with_an_invalid_uri_is_rejected(client, editor):
    response = client_for(client, editor).post(url("resource_add"), {
        "uri": "not a uri", "name": "x", "text": "hello", "_save": "Save"})
    assert response.status_code == 200
    assert "uri" in response.context["adminform"].form.errors
    assert not Resource.objects.exists()


def test_resource_text_preview_shows_read_json(client, editor):
    resource = make_resource("docs://guide", text="Be kind.")
    response = client_for(client, editor).get(url("resource_preview", resource.pk))
    assert json.loads(response.context["result_json"]) == {
        "contents": [{"uri": "docs://guide", "mimeType": "text/plain", "text": "Be kind."}]
    }


def test_template_preview_from_a_uri_and_from_variable_values(client, editor):
    template = make_template("tickets://{id}", body="Ticket {{ id }}", suggestions={"id": ["42"]})
    client_for(client, editor)
    by_uri = client.get(url("resourcetemplate_preview", template.pk), {"preview": "1", "uri": "tickets://7"})
    assert json.loads(by_uri.context["result_json"])["contents"][0] == {
        "uri": "tickets://7", "mimeType": "text/plain", "text": "Ticket 7"}
    by_values = client.get(url("resourcetemplate_preview", template.pk))  # prefilled from the suggestion
    assert by_values.context["text"] == "Ticket 42"
    empty = client.get(url("resourcetemplate_preview", template.pk), {"preview": "1", "var_id": ""})
    assert "id is empty" in empty.context["error"]
    mismatch = client.get(url("resourcetemplate_preview", template.pk), {"preview": "1", "uri": "other://7"})
    assert "does not match" in mismatch.context["error"]


def test_template_body_placeholder_outside_the_uri_template_is_rejected(client, editor):
    response = client_for(client, editor).post(url("resourcetemplate_add"), {
        "uri_template": "tickets://{id}", "name": "tickets", "body": "Ticket {{ number }}", "_save": "Save",
        "variables-TOTAL_FORMS": 0, "variables-INITIAL_FORMS": 0,
        "variables-MIN_NUM_FORMS": 0, "variables-MAX_NUM_FORMS": 1000,
    })
    assert response.status_code == 200
    assert "{{ number }} is not a variable" in " ".join(response.context["adminform"].form.errors["body"])
    assert not ResourceTemplate.objects.exists()


def test_template_suggestions_for_an_unknown_variable_are_rejected(client, editor):
    response = client_for(client, editor).post(url("resourcetemplate_add"), {
        "uri_template": "tickets://{id}", "name": "tickets", "body": "Ticket {{ id }}", "_save": "Save",
        "variables-TOTAL_FORMS": 1, "variables-INITIAL_FORMS": 0,
        "variables-MIN_NUM_FORMS": 0, "variables-MAX_NUM_FORMS": 1000,
        "variables-0-name": "ticket", "variables-0-suggestions": "1",
    })
    assert response.status_code == 200
    formset = response.context["inline_admin_formsets"][0].formset
    assert "'ticket', which the URI template does not have" in " ".join(formset.non_form_errors())


# -------------------------------------------------------------------- versions & audit log


def test_versions_and_labels_are_read_only_in_the_admin(client, publisher):
    prompt = published_prompt(publisher)
    version = prompt.versions.get()
    client_for(client, make_user(None))
    page = client.get(url("promptversion_change", version.pk))
    assert page.status_code == 200 and "first release" in page.text
    assert client.get(url("promptversion_add")).status_code == 403
    assert client.post(url("promptversion_delete", version.pk), {"post": "yes"}).status_code == 403
    label = prompt.labels.get()
    assert client.post(url("promptlabel_change", label.pk), {"name": "x"}).status_code == 403
    assert PromptVersion.objects.get().change_note == "first release"


def test_audit_log_is_read_only_even_for_superusers(client, editor):
    make_prompt()
    drafts.record_draft_change(Prompt.objects.get(), before=None, acting_user=editor)
    entry = AuditEntry.objects.get()
    client_for(client, make_user(None))
    assert client.get(url("auditentry_add")).status_code == 403
    assert client.post(url("auditentry_delete", entry.pk), {"post": "yes"}).status_code == 403
    page = client.get(url("auditentry_change", entry.pk))
    assert page.status_code == 200
    assert "Message 1" in page.text and "Tell me about {{ topic }}." in page.text  # the readable diff
    assert "messages[1].content.text" not in page.text
    assert 'name="_save"' not in page.text
    assert "delete_selected" not in client.get(url("auditentry_changelist")).text
    assert AuditEntry.objects.count() == 1


def _two_audit_entries(editor, publisher):
    prompt = make_prompt(name="alpha")
    drafts.record_draft_change(prompt, before=None, acting_user=editor)
    services.publish(prompt, acting_user=publisher, note="go", labels=["staging"])


def test_auditor_exports_csv_respecting_the_filters(client, editor, publisher, auditor):
    _two_audit_entries(editor, publisher)
    client_for(client, auditor)
    changelist = client.get(url("auditentry_changelist"), {"action__exact": "publish"})
    assert url("auditentry_export", "csv") + "?action__exact=publish" in changelist.text
    response = client.get(url("auditentry_export", "csv"), {"action__exact": "publish"})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert [(r["action"], r["entry_key"], r["actor_name"]) for r in rows] == [("publish", "alpha", publisher.username)]
    assert json.loads(rows[0]["changes"])


def test_auditor_exports_json_of_everything_without_filters(client, editor, publisher, auditor):
    _two_audit_entries(editor, publisher)
    response = client_for(client, auditor).get(url("auditentry_export", "json"))
    assert response.status_code == 200
    body = json.loads(response.content)
    assert body["count"] == AuditEntry.objects.count() == 3
    assert {e["action"] for e in body["entries"]} == {"create", "publish", "label_move"}


@pytest.mark.parametrize("role", ["Editors", "Publishers"])
def test_only_auditors_may_export_the_audit_log(client, role):
    user = make_user(role)
    client_for(client, user)
    assert client.get(url("auditentry_export", "csv")).status_code == 403
    assert client.get(url("auditentry_export", "json")).status_code == 403


def test_publisher_sees_no_export_buttons(client, publisher):
    page = client_for(client, publisher).get(url("auditentry_changelist"))
    assert page.status_code == 200
    assert "Export CSV" not in page.text


# ------------------------------------------------------------------------------- MCP clients


def test_creating_a_client_shows_the_token_once_and_stores_only_its_hash(client, publisher):
    client_for(client, publisher)
    response = client.post(url("mcpclient_add"), {
        "name": "support-bot", "description": "", "label": "production", "scope_tags": "support",
        "active": "on", "expires_at_0": "", "expires_at_1": "", "_save": "Save",
        "fetches-TOTAL_FORMS": 0, "fetches-INITIAL_FORMS": 0, "fetches-MIN_NUM_FORMS": 0, "fetches-MAX_NUM_FORMS": 0,
    })
    assert response.status_code == 200
    [(_mcp_client, token)] = response.context["issued"]
    assert token in response.text
    stored = McpClient.objects.get(name="support-bot")
    assert stored.token_hash == hash_token(token)
    assert token not in stored.token_hash and token.startswith(stored.token_prefix)
    assert token not in client.get(url("mcpclient_change", stored.pk)).text
    assert token not in client.get(url("mcpclient_changelist")).text


def test_regenerate_token_action_replaces_the_old_token(client, publisher):
    from registry.serving.clients import create_client

    mcp_client, old_token = create_client(name="bot")
    response = client_for(client, publisher).post(
        url("mcpclient_changelist"), {"action": "regenerate_token", "_selected_action": [mcp_client.pk]})
    assert response.status_code == 200
    [(_, new_token)] = response.context["issued"]
    mcp_client.refresh_from_db()
    assert new_token != old_token
    assert mcp_client.token_hash == hash_token(new_token)


def test_client_page_shows_what_the_client_was_served(client, publisher):
    from django.utils import timezone

    from registry.serving.clients import create_client

    mcp_client, _ = create_client(name="bot")
    FetchCounter.objects.create(client=mcp_client, client_name="bot", entry_kind="prompt", entry_key="greet-xyz",
                                version=3, label="production", count=5, first_at=timezone.now(),
                                last_at=timezone.now())
    page = client_for(client, publisher).get(url("mcpclient_change", mcp_client.pk))
    assert page.status_code == 200
    assert "greet-xyz" in page.text


def test_editor_cannot_create_clients(client, editor):
    assert client_for(client, editor).get(url("mcpclient_add")).status_code == 403


def test_message_rows_are_ordered_by_position(client, editor):
    prompt = make_prompt(arguments=[], messages=[
        {"kind": "text", "text": "first"}, {"kind": "text", "text": "second", "role": "assistant"}])
    PromptMessage.objects.filter(text="first").update(position=5)
    page = client_for(client, editor).get(url("prompt_change", prompt.pk))
    forms = page.context["inline_admin_formsets"][1].formset.forms
    assert [f.instance.text for f in forms] == ["second", "first"]


def test_restoring_the_draft_from_an_old_version_is_confirmed_and_audited(client, editor, publisher):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Something else about {{ topic }}.")
    client_for(client, editor)
    history = client.get(url("prompt_history", prompt.pk))
    assert url("prompt_restore", prompt.pk) + "?version=1" in history.text
    confirm = client.get(url("prompt_restore", prompt.pk), {"version": 1})
    assert confirm.status_code == 200
    assert prompt.messages.get().text == "Something else about {{ topic }}."  # nothing changed yet
    response = client.post(url("prompt_restore", prompt.pk), {"version": 1, "note": "undo my edit"})
    assert response.status_code == 302
    assert prompt.messages.get().text == "Tell me about {{ topic }}."
    entry = AuditEntry.objects.get(action="restore_draft")
    assert (entry.actor, entry.from_version, entry.note) == (editor, 1, "undo my edit")
    assert PromptVersion.objects.count() == 1


def test_auditor_cannot_restore_a_draft(client, auditor, publisher):
    prompt = published_prompt(publisher)
    response = client_for(client, auditor).post(url("prompt_restore", prompt.pk), {"version": 1})
    assert response.status_code == 403
    assert not AuditEntry.objects.filter(action="restore_draft").exists()


def test_resource_uri_becomes_read_only_once_published(client, editor, publisher):
    resource = make_resource("docs://fixed", text="v1 text")
    release(resource, note="first")
    response = client_for(client, editor).post(url("resource_change", resource.pk), {
        "uri": "docs://moved", "name": resource.name, "mime_type": "text/plain", "text": "v2 text", "_save": "Save"})
    assert response.status_code == 302
    resource.refresh_from_db()
    assert (resource.uri, resource.text) == ("docs://fixed", "v2 text")
    assert AuditEntry.objects.get(entry_kind="resource", action="edit").changes == [
        {"field": "text", "before": "v1 text", "after": "v2 text"}]


def test_auditor_reads_drafts_but_cannot_change_them(client, auditor):
    prompt = make_prompt()
    client_for(client, auditor)
    page = client.get(url("prompt_change", prompt.pk))
    assert page.status_code == 200
    assert 'name="_save"' not in page.text
    assert client.get(url("prompt_preview", prompt.pk)).status_code == 200
    assert client.get(url("prompt_history", prompt.pk)).status_code == 200
    response = client.post(url("prompt_change", prompt.pk), prompt_post(prompt, description="changed"))
    assert response.status_code == 403
    prompt.refresh_from_db()
    assert prompt.description == "A prompt for tests"
    assert not AuditEntry.objects.exists()


def test_creating_a_resource_template_with_suggestions_is_audited(client, editor):
    response = client_for(client, editor).post(url("resourcetemplate_add"), {
        "uri_template": "tickets://{id}", "name": "tickets", "body": "Ticket {{ id }}", "_save": "Save",
        "variables-TOTAL_FORMS": 1, "variables-INITIAL_FORMS": 0,
        "variables-MIN_NUM_FORMS": 0, "variables-MAX_NUM_FORMS": 1000,
        "variables-0-name": "id", "variables-0-suggestions": "1\n2",
    })
    assert response.status_code == 302
    template = ResourceTemplate.objects.get()
    assert template.variables.get().suggestion_list == ["1", "2"]
    entry = AuditEntry.objects.get(entry_kind="template")
    assert entry.action == "create"
    assert {"field": "variables[1].suggestions", "before": None, "after": ["1", "2"]} in entry.changes


def test_preview_argument_named_like_a_page_parameter_does_not_collide(client, editor):
    prompt = make_prompt(arguments=[{"name": "preview", "required": True}],
                         messages=[{"kind": "text", "text": "Show {{ preview }}"}])
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk), {"preview": "1", "arg-preview": "it"})
    assert json.loads(response.context["result_json"])["messages"][0]["content"]["text"] == "Show it"


def test_csv_export_defuses_spreadsheet_formulas(client, editor, auditor):
    prompt = make_prompt()
    drafts.record_draft_change(prompt, before=None, acting_user=editor, note="=HYPERLINK(\"http://x\")")
    response = client_for(client, auditor).get(url("auditentry_export", "csv"))
    [row] = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert row["note"] == "'=HYPERLINK(\"http://x\")"
    assert json.loads(client.get(url("auditentry_export", "json")).content)["entries"][0]["note"].startswith("=")


# ------------------------------------------------------------------ rollouts & who got what


def _two_version_prompt(name="greet", labels=("staging",)):
    prompt = make_prompt(name)
    release(prompt, note="v1", labels=labels)
    edit_first_message(prompt, "Second {{ topic }}.")
    release(prompt, note="v2", labels=())
    return prompt


def test_publisher_starts_a_rollout_and_the_page_shows_progress(client, publisher):
    from django.utils import timezone

    from registry.serving.clients import create_client

    prompt = _two_version_prompt()
    for i in range(20):
        create_client(name=f"agent-{i}", label="staging")
    FetchCounter.objects.create(client_name="agent-1", entry_kind="prompt", entry_key="greet", version=2,
                                label="staging", count=4, first_at=timezone.now(), last_at=timezone.now())
    FetchCounter.objects.create(client_name="agent-2", entry_kind="prompt", entry_key="greet", version=1,
                                label="staging", count=2, first_at=timezone.now(), last_at=timezone.now())
    client_for(client, publisher)
    bad = client.post(url("prompt_rollout", prompt.pk), {"label": "staging", "version": 2, "percent": 150})
    assert bad.status_code == 200 and "from 0 to 100" in bad.text
    response = client.post(url("prompt_rollout", prompt.pk), {"label": "staging", "version": 2, "percent": 30,
                                                              "note": "canary"})
    assert response.status_code == 302
    page = client.get(url("prompt_rollout", prompt.pk))
    [progress] = page.context["progress"]
    assert progress["expected_new"] + progress["expected_old"] == 20
    assert progress["expected_new"] == sum(1 for i in range(20)
                                           if buckets.gets_candidate(f"agent-{i}", "greet", 30))
    assert (progress["observed_new"], progress["observed_old"]) == (["agent-1"], ["agent-2"])
    assert "v2 to 30% of clients" in page.text
    assert client.get(url("rollout_changelist")).status_code == 200
    history = client.get(url("prompt_history", prompt.pk))
    assert "goes to 30% of clients" in history.text


def test_editors_see_rollout_progress_but_cannot_change_it(client, editor, publisher):
    prompt = _two_version_prompt()
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=30, acting_user=publisher)
    client_for(client, editor)
    assert client.get(url("prompt_rollout", prompt.pk)).status_code == 200
    denied = client.post(url("prompt_rollout", prompt.pk), {"label": "staging", "version": 2, "percent": 100})
    assert denied.status_code == 403
    assert Rollout.objects.get().percent == 30


def test_rollout_on_production_from_the_admin_needs_approval(client, publisher):
    prompt = _two_version_prompt(labels=("production",))
    response = client_for(client, publisher).post(url("prompt_rollout", prompt.pk),
                                                  {"label": "production", "version": 2, "percent": 10})
    assert response.status_code == 200 and "protected label" in response.text
    assert not Rollout.objects.exists()


def test_client_page_shows_what_the_client_receives_now_including_its_rollout_bucket(client, publisher):
    from registry.serving.clients import create_client

    prompt = _two_version_prompt()
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=50, acting_user=publisher)
    names = [f"bot-{i}" for i in range(40)]
    inside = next(n for n in names if buckets.gets_candidate(n, "greet", 50))
    outside = next(n for n in names if not buckets.gets_candidate(n, "greet", 50))
    client_for(client, publisher)
    for name, version, note in ((inside, 2, "in the rollout"), (outside, 1, "not in the rollout")):
        mcp_client, _ = create_client(name=name, label="staging")
        page = client.get(url("mcpclient_change", mcp_client.pk))
        assert page.status_code == 200
        assert f"<td>greet</td><td>v{version}</td><td>staging</td><td>{note}" in page.text


@pytest.mark.parametrize("params", [{"changes__contains": "x"}, {"changes__has_key": "field"},
                                    {"note__regex": "(a+)+$"}, {"entry_key__startswith": "al"},
                                    {"actor__password__startswith": "pbkdf2"}, {"created_at__week_day": "2"}])
def test_audit_export_and_change_list_refuse_undeclared_lookups_with_a_400(client, editor, publisher, auditor, params):
    _two_audit_entries(editor, publisher)
    client_for(client, auditor)
    assert client.get(url("auditentry_export", "json"), params).status_code == 400
    assert client.get(url("auditentry_changelist"), params).status_code == 400


@pytest.mark.parametrize("params", [{"action__exact": "publish"}, {"entry_kind__exact": "prompt"},
                                    {"created_at__year": "2020"}, {"created_at__gte": "2020-01-01T00:00:00+00:00"},
                                    {"actor__id__exact": "1"}, {"actor__isnull": "True"}])
def test_the_declared_filters_and_the_date_hierarchy_still_filter_the_export(client, editor, publisher, auditor,
                                                                            params):
    _two_audit_entries(editor, publisher)
    client_for(client, auditor)
    assert client.get(url("auditentry_export", "json"), params).status_code == 200
    assert client.get(url("auditentry_changelist"), params).status_code == 200


def test_a_simple_list_filter_parameter_still_filters(client, publisher):
    client_for(client, publisher)
    assert client.get(url("reviewrequest_changelist"), {"status": "pending"}).status_code == 200
    assert client.get(url("prompt_changelist"), {"archived": "no"}).status_code == 200
    assert client.get(url("prompt_changelist"), {"tags__regex": "("}).status_code == 400


# ------------------------------------------------------------------------- escaping (XSS)

XSS_IMG = '<img src=x onerror="window.__xss=1">'
XSS_SCRIPT = "<script>window.__xss=1</script>"


def _escaped(payload: str) -> str:
    return payload.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


@pytest.mark.parametrize("payload", [XSS_IMG, XSS_SCRIPT])
@pytest.mark.parametrize("side", ["a", "b"])
def test_diff_page_refuses_a_label_name_from_the_address_without_echoing_it(client, publisher, payload, side):
    prompt = published_prompt(publisher)
    edit_first_message(prompt, "Tell me about {{ topic }}.\nAnd then some more.")
    other = "b" if side == "a" else "a"
    response = client_for(client, publisher).get(
        url("prompt_diff", prompt.pk), {side: f"label:{payload}", other: "draft"})
    assert response.status_code == 404
    assert payload not in response.text and _escaped(payload) not in response.text


def _entry_with_markup(payload: str, publisher) -> Prompt:
    """v1 is plain; the draft carries `payload` in its description, an argument title and a long message."""
    prompt = published_prompt(publisher)
    Prompt.objects.filter(pk=prompt.pk).update(description=f"About {payload}")
    prompt.arguments.update(title=payload)
    edit_first_message(prompt, f"Tell me about {{{{ topic }}}}.\n{payload}\nThanks.")
    return Prompt.objects.get(pk=prompt.pk)


def _diff_page(client, prompt):
    return client.get(url("prompt_diff", prompt.pk))


def _publish_page(client, prompt):
    return client.get(url("prompt_publish", prompt.pk))


def _restore_page(client, prompt):
    return client.get(url("prompt_restore", prompt.pk), {"version": "1"})


def _audit_page(client, prompt):
    drafts.record_draft_change(prompt, before=prompt.versions.get().snapshot, acting_user=None, actor="test")
    entry = AuditEntry.objects.filter(entry_id=prompt.pk, action="edit").latest("id")
    return client.get(url("auditentry_change", entry.pk))


def _review_page(client, prompt):
    review = reviews.request_publication(prompt, acting_user=make_user("Editors"), note="please", label="production")
    return client.get(url("reviewrequest_change", review.pk))


@pytest.mark.parametrize("payload", [XSS_IMG, XSS_SCRIPT])
@pytest.mark.parametrize("page", [_diff_page, _publish_page, _restore_page, _audit_page, _review_page])
def test_every_diff_escapes_markup_in_the_entry(client, publisher, payload, page):
    prompt = _entry_with_markup(payload, publisher)
    response = page(client_for(client, publisher), prompt)
    assert response.status_code == 200
    assert payload not in response.text
    assert _escaped(payload) in response.text


def test_entry_whose_stored_content_is_missing_shows_an_integrity_warning(client, publisher, content_store):
    from registry.storage import blobs as content

    resource = make_resource("docs://lost", text="", data=PNG_1X1, mime_type="image/png")
    release(resource)
    (content_store / content.object_name(resource.data_sha256)).unlink()
    response = client_for(client, publisher).get(url("resource_change", resource.pk))
    assert response.status_code == 200
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    assert any(w.startswith("Integrity warning: the draft: content " + resource.data_sha256) for w in warnings)
    assert any("v1 (production)" in w for w in warnings)
    assert "missing from the content store" in response.content.decode()


def test_entry_whose_stored_content_is_damaged_shows_an_integrity_warning(client, publisher, content_store):
    """A short object under the final name (a write cut short before writes were atomic, a disk
    fault) is warned of like a missing one: its size is not the one recorded."""
    from registry.storage import blobs as content

    resource = make_resource("docs://short", text="", data=PNG_1X1 * 3, mime_type="image/png")
    release(resource)
    (content_store / content.object_name(resource.data_sha256)).write_bytes(PNG_1X1)
    response = client_for(client, publisher).get(url("resource_change", resource.pk))
    assert response.status_code == 200
    warnings = [str(m) for m in response.context["messages"] if m.level_tag == "warning"]
    damaged = f"is damaged: {len(PNG_1X1):,} of {3 * len(PNG_1X1):,} bytes stored"
    assert any(w.startswith("Integrity warning: the draft: content " + resource.data_sha256) and damaged in w
               for w in warnings), warnings
    assert any("v1 (production)" in w and damaged in w for w in warnings)


def test_a_rollout_changed_by_someone_else_since_the_page_was_shown_is_not_replaced(client, publisher,
                                                                                   second_publisher):
    """Two publishers have the rollout page open; the second one's submit, based on what the page
    showed, is refused with the current state named, and applies once they submit again."""
    prompt = _two_version_prompt()
    edit_first_message(prompt, "Third {{ topic }}.")
    release(prompt, note="v3", labels=())
    mine = client_for(client, publisher).get(url("prompt_rollout", prompt.pk))
    seen = mine.context["form"].initial["seen"]
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=50, acting_user=second_publisher)
    response = client.post(url("prompt_rollout", prompt.pk), {"label": "staging", "version": 3, "percent": 10,
                                                              "seen": seen})
    assert response.status_code == 200
    assert "changed since you read it" in response.text and "v2 is rolling out to 50%" in response.text
    rollout = Rollout.objects.get()
    assert (rollout.candidate_version, rollout.percent) == (2, 50)
    again = client.post(url("prompt_rollout", prompt.pk), {"label": "staging", "version": 3, "percent": 10,
                                                           "seen": response.context["form"].data["seen"]})
    assert again.status_code == 302
    assert (Rollout.objects.get().candidate_version, Rollout.objects.get().percent) == (3, 10)
