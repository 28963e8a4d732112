"""Every admin page that shows a diff shows what a publisher approves: a document's words, a binary
file's type, size and hash, every argument's type and bounds.

Snapshots carry documents as content-store references (sha256, size, encoding); the pages load
the two texts of a changed document (up to DIFF_DOCUMENT_LIMIT each), and nothing else does.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from registry.authoring import drafts, snapshots
from registry.models import AuditEntry, PromptArgument, Resource
from registry.release import reviews
from registry.storage import blobs as content
from tests.factories import PNG_1X1, make_prompt, make_resource, make_user, release

pytestmark = pytest.mark.django_db

V1 = "Our style\nThe quick fox jumps.\nKeep it short.\n"
V2 = "Our style\nThe slow fox jumps.\nKeep it short.\n"


def url(name: str, *args: Any) -> str:
    return reverse(f"admin:registry_{name}", args=args)


def edited_text(resource: Resource, text: str) -> Resource:
    resource.text = text
    resource.save()
    return resource


def shows_the_words(page) -> bool:
    return page.status_code == 200 and "<del>quick</del>" in page.text and "<ins>slow</ins>" in page.text


@pytest.fixture
def guide(publisher):
    resource = make_resource("docs://guide", text=V1, mime_type="text/markdown")
    release(resource, note="v1")
    return edited_text(resource, V2)


def test_the_compare_page_shows_the_words_of_a_text_document(client, publisher, guide):
    client.force_login(publisher)
    page = client.get(url("resource_diff", guide.pk))
    assert shows_the_words(page)
    assert "Sha256" not in page.text  # the document is one field, not two hashes


def test_the_publish_page_shows_the_words_of_a_text_document(client, publisher, guide):
    client.force_login(publisher)
    assert shows_the_words(client.get(url("resource_publish", guide.pk)))


def test_the_request_page_shows_the_words_of_a_text_document(client, editor, guide):
    client.force_login(editor)
    assert shows_the_words(client.get(url("resource_request", guide.pk)))


def test_the_restore_page_shows_the_words_of_a_text_document(client, publisher, guide):
    client.force_login(publisher)
    page = client.get(url("resource_restore", guide.pk), {"version": 1})
    assert page.status_code == 200 and "<ins>quick</ins>" in page.text and "<del>slow</del>" in page.text


def test_the_label_page_shows_the_words_of_a_text_document(client, publisher, guide):
    release(guide, note="v2", labels=["staging"])
    client.force_login(publisher)
    assert shows_the_words(client.get(url("resource_label", guide.pk), {"label": "production", "version": 2}))


def test_the_review_page_shows_the_requested_words_on_any_worker(client, editor, publisher, guide):
    review = reviews.request_publication(guide, acting_user=editor, note="simpler wording")
    snapshots._recent_texts.clear()  # another worker, or after a restart: only the content store is shared
    client.force_login(publisher)
    assert shows_the_words(client.get(url("reviewrequest_change", review.pk)))


def test_the_review_page_of_a_version_shows_its_words(client, editor, publisher, guide):
    release(guide, note="v2", labels=["staging"])
    review = reviews.request_publication(guide, acting_user=editor, note="v2 please", version_number=2)
    client.force_login(publisher)
    assert shows_the_words(client.get(url("reviewrequest_change", review.pk)))


def test_an_embedded_text_in_a_prompt_message_shows_its_words(client, publisher):
    prompt = make_prompt(messages=[{"role": "user", "kind": "text", "text": "About {{ topic }}"},
                                   {"role": "user", "kind": "resource", "uri": "docs://inline",
                                    "mime_type": "text/plain", "text": V1}])
    release(prompt, note="v1")
    message = prompt.messages.get(kind="resource")
    message.text = V2
    message.save()
    client.force_login(publisher)
    assert shows_the_words(client.get(url("prompt_diff", prompt.pk)))


def test_an_audit_entry_of_a_long_document_loads_its_words_from_the_store(client, publisher, guide):
    """Texts over the audit log's 64 KiB are recorded by hash; the entry's page reads the two stored texts."""
    filler = "".join(f"line {n} of the long style guide\n" for n in range(3000))  # ~100 KiB
    edited_text(guide, filler + V1)
    release(guide, note="long v2")
    edited_text(guide, filler + V2)
    release(guide, note="long v3")
    entry = AuditEntry.objects.filter(action="publish", to_version=3).get()
    assert not any(change["field"] == "text" for change in entry.changes)  # too long to record as text
    client.force_login(publisher)
    assert shows_the_words(client.get(url("auditentry_change", entry.pk)))


def test_a_document_over_the_limit_is_shown_by_size_and_hash_without_reading_it(client, publisher, guide,
                                                                              monkeypatch):
    big = "x" * (snapshots.DIFF_DOCUMENT_LIMIT + 10) + "\n"
    edited_text(guide, big + V1)
    release(guide, note="big v2")
    edited_text(guide, big + V2)
    monkeypatch.setattr(content, "read", lambda sha256: pytest.fail("the page read a document over the limit"))
    snapshots._recent_texts.clear()
    client.force_login(publisher)
    page = client.get(url("resource_diff", guide.pk), {"a": "v2", "b": "draft"})
    assert page.status_code == 200
    assert "too long to compare here: over 256 KiB" in page.text
    assert f"{len(big + V1):,} bytes" in page.text


def test_a_binary_document_shows_its_type_size_and_hash(client, publisher):
    logo = make_resource("docs://logo", text="", mime_type="image/png")
    logo.data = PNG_1X1
    logo.save()
    release(logo, note="v1")
    logo.data = PNG_1X1 + b"\x00"
    logo.save()
    client.force_login(publisher)
    page = client.get(url("resource_diff", logo.pk))
    assert f"image/png · 71 bytes · sha256 {logo.data_sha256[:12]}" in page.text
    assert f"image/png · 70 bytes · sha256 {content.sha256_of(PNG_1X1)[:12]}" in page.text


def test_pages_that_only_summarise_changes_read_no_document(client, publisher, guide, monkeypatch):
    release(guide, note="v2")
    monkeypatch.setattr(content, "read", lambda sha256: pytest.fail("a summary read a document"))
    monkeypatch.setattr(content, "stored_size", lambda sha256: pytest.fail("a summary looked up a document"))
    client.force_login(publisher)
    listed = client.get(url("auditentry_changelist"))
    assert listed.status_code == 200 and "Text changed" in listed.text
    assert client.get(url("resource_history", guide.pk)).status_code == 200


# ------------------------------------------------------------------------------ typed arguments


@pytest.fixture
def typed(publisher):
    prompt = make_prompt(arguments=[{"name": "tone", "type": "enum", "choices": "formal\nwarm"},
                                    {"name": "topic"}],
                         messages=[{"role": "user", "kind": "text", "text": "{{ tone }} {{ topic }}"}])
    release(prompt, note="v1")
    return prompt


def test_adding_an_enum_choice_shows_in_the_diff(client, publisher, typed):
    PromptArgument.objects.filter(prompt=typed, name="tone").update(choices="formal\nwarm\ncasual")
    client.force_login(publisher)
    page = client.get(url("prompt_diff", typed.pk))
    assert "No differences" not in page.text
    assert "Choices" in page.text and "casual" in page.text


def test_setting_a_maximum_length_shows_in_the_diff(client, publisher, typed):
    PromptArgument.objects.filter(prompt=typed, name="topic").update(max_length=40)
    client.force_login(publisher)
    page = client.get(url("prompt_diff", typed.pk))
    assert "No differences" not in page.text and "Max length" in page.text and "40" in page.text
    [table] = [s.table for s in page.context["diff"].sections if s.kind == "table"]
    [row] = [r for r in table.rows if r.status == "changed"]
    assert row.title == "topic"


def test_a_type_change_names_both_types_in_the_review_page(client, editor, publisher, typed):
    PromptArgument.objects.filter(prompt=typed, name="topic").update(type="string")
    review = reviews.request_publication(typed, acting_user=editor, note="one line only")
    client.force_login(publisher)
    page = client.get(url("reviewrequest_change", review.pk))
    assert "Text (any, may span lines)" in page.text and "Single line of text" in page.text
    drafts.record_draft_change(typed, before=typed.versions.get().snapshot, acting_user=make_user("Editors"))
    entry = AuditEntry.objects.filter(action="edit").latest("id")
    assert "Argument 2 type changed" in client.get(url("auditentry_changelist")).text  # the record keeps positions
    assert client.get(url("auditentry_change", entry.pk)).status_code == 200
