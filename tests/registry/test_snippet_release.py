"""Snippets through the release pipeline: drafts, review, labels, rollback, audit, and the rules that
protect their dependents (archive refusal, protected dependents, percentage rollouts)."""

from __future__ import annotations

import pytest

from registry.authoring.drafts import draft_data, restore_draft, save_draft
from registry.errors import ApprovalRequired, InvalidEntry
from registry.models import AuditEntry, PromptMessage, Snippet, SnippetLabel
from registry.release import reviews, rollouts, services
from tests.factories import make_prompt, make_snippet, release

pytestmark = pytest.mark.django_db


def production_of(entry) -> int | None:
    label = entry.labels.filter(name="production").select_related("version").first()
    return label.version.number if label else None


def test_a_snippet_draft_saves_restores_and_reads_back_as_draft_data(editor):
    snippet = Snippet(name="house-style")
    save_draft(snippet, {"name": "house-style", "description": "How we write", "text": "Be {{ tone }}.",
                         "tags": ["Style"], "arguments": [{"name": "tone", "description": "", "type": "enum"}]},
               acting_user=editor)
    data = draft_data(snippet)
    assert data["text"] == "Be {{ tone }}." and data["tags"] == ["style"]
    assert data["arguments"] == [{"name": "tone", "description": "", "type": "enum"}]
    release(snippet)
    save_draft(snippet, {"text": "Be brief.", "arguments": []}, acting_user=editor)
    restore_draft(snippet, 1, acting_user=editor)
    snippet.refresh_from_db()
    assert draft_data(snippet)["text"] == "Be {{ tone }}." and snippet.arguments.get().type == "enum"
    assert AuditEntry.objects.filter(entry_kind="snippet", action="restore_draft").exists()


def test_a_snippet_is_reviewed_approved_released_and_rolled_back_with_audit_rows(editor, publisher,
                                                                                 second_publisher):
    snippet = make_snippet("house-style", text="Be kind.")
    review = reviews.request_publication(snippet, acting_user=editor, note="first style")
    reviews.approve(review, acting_user=publisher)
    assert production_of(snippet) == 1
    snippet.text = "Be kind and brief."
    snippet.save()
    review = reviews.request_publication(snippet, acting_user=editor, note="shorter")
    with pytest.raises(ApprovalRequired):
        services.publish(snippet, acting_user=publisher, note="unreviewed")
    reviews.approve(review, acting_user=second_publisher)
    assert production_of(snippet) == 2
    services.rollback(snippet, acting_user=publisher, note="too terse")
    assert production_of(snippet) == 1
    actions = list(AuditEntry.objects.filter(entry_kind="snippet", entry_id=snippet.pk).order_by("id")
                   .values_list("action", flat=True))
    for action in ("review_requested", "review_approved", "publish", "label_move", "incident_rollback", "rollback"):
        assert action in actions


def test_archiving_a_snippet_that_served_entries_include_is_refused_with_the_list(publisher):
    snippet = make_snippet("house-style")
    release(snippet)
    prompt = make_prompt("support-reply")
    PromptMessage.objects.filter(prompt=prompt).update(text="Hello. {{> house-style }} {{ topic }}")
    release(prompt)
    with pytest.raises(InvalidEntry) as refused:
        services.set_archived(snippet, archived=True, acting_user=publisher, note="old")
    assert "prompt support-reply v1 (production)" in str(refused.value)
    snippet.refresh_from_db()
    assert snippet.archived_at is None


def test_archiving_an_unused_snippet_is_allowed(publisher):
    snippet = make_snippet("house-style")
    release(snippet)
    services.set_archived(snippet, archived=True, acting_user=publisher, note="old")
    snippet.refresh_from_db()
    assert snippet.archived_at is not None


def test_a_snippet_release_that_changes_a_protected_dependent_needs_a_review(editor, publisher):
    snippet = make_snippet("house-style", text="v1 style")
    release(snippet, labels=["staging"])
    prompt = make_prompt("support-reply")
    PromptMessage.objects.filter(prompt=prompt).update(text="{{> house-style }} {{ topic }}")
    release(prompt, labels=["staging"])
    services.set_label_protected(prompt, label="staging", protected=True, acting_user=None,
                                 reason="freeze staging")
    snippet.text = "v2 style"
    snippet.save()
    services.publish(snippet, acting_user=publisher, note="v2", labels=[])
    assert services.is_protected(snippet, "staging")
    with pytest.raises(ApprovalRequired):
        services.move_label(snippet, label="staging", version_number=2, acting_user=publisher)
    review = reviews.request_publication(snippet, acting_user=editor, note="new style", label="staging",
                                         version_number=2)
    reviews.approve(review, acting_user=publisher)
    assert SnippetLabel.objects.get(entry=snippet, name="staging").version.number == 2
    move = AuditEntry.objects.filter(entry_kind="snippet", action="label_move", label="staging").latest("id")
    assert "prompt support-reply (staging)" in move.note


def test_a_snippet_label_move_without_protected_dependents_needs_no_review(publisher):
    snippet = make_snippet("house-style", text="v1 style")
    release(snippet, labels=["staging"])
    snippet.text = "v2 style"
    snippet.save()
    services.publish(snippet, acting_user=publisher, note="v2", labels=["staging"])
    assert not services.is_protected(snippet, "staging")


def test_a_percentage_rollout_of_a_snippet_runs_and_a_request_may_ask_for_one(publisher, editor):
    snippet = make_snippet("house-style", text="v1")
    release(snippet, labels=["staging"])
    snippet.text = "v2"
    snippet.save()
    services.publish(snippet, acting_user=publisher, note="v2", labels=[])
    assert rollouts.set_rollout(snippet, label="staging", version_number=2, percent=10,
                                acting_user=publisher).percent == 10
    rollouts.set_rollout(snippet, label="staging", version_number=2, percent=0, acting_user=publisher)
    request = reviews.request_publication(snippet, acting_user=editor, note="try", label="staging",
                                          version_number=2, percent=10)
    assert request.percent == 10
