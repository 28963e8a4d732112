"""Audit rows about review requests say what happened in words, not "v1 → none" (issue 23), in the
audit list and on the entry's History page, in every language of the admin."""

from __future__ import annotations

import pytest
from django.utils import translation

from registry.admin.audit import versions_text
from registry.models import AuditEntry
from registry.release import reviews
from tests.factories import make_prompt, release
from tests.registry.test_admin import client_for, edit_first_message, url

pytestmark = pytest.mark.django_db


def _reviewed_prompt(editor, publisher):
    prompt = make_prompt("worded")
    release(prompt, note="v1")
    edit_first_message(prompt, "New wording {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    reviews.approve(review, acting_user=publisher, comment="ok")
    return prompt


def test_review_rows_say_what_was_asked_and_what_the_label_served(client, editor, publisher, superuser):
    prompt = _reviewed_prompt(editor, publisher)
    rows = {row.action: row for row in AuditEntry.objects.filter(entry_key="worded").order_by("id")}  # newest wins
    assert versions_text(rows["review_requested"]) == "asked for the draft (production served v1)"
    assert versions_text(rows["review_approved"]) == "approved the draft (production served v1)"
    assert versions_text(rows["label_move"]) == "v1 → v2"
    client_for(client, superuser)
    for page in (client.get(url("auditentry_changelist")), client.get(url("prompt_history", prompt.pk))):
        text = page.content.decode()
        assert "asked for the draft (production served v1)" in text
        assert "→ none" not in text and "none →" not in text


def test_a_request_when_nothing_is_served_says_so():
    row = AuditEntry(action="review_requested", label="production", from_version=None, to_version=3)
    assert versions_text(row) == "asked for v3 (production served nothing)"
    assert versions_text(AuditEntry(action="publish", from_version=None, to_version=1)) == "nothing → v1"


@pytest.mark.parametrize("language, words", [
    ("de", "angefragt: der Entwurf (production lieferte v1)"),
    ("zh-hans", "申请了草稿（production 当时提供 v1）"),
])
def test_the_words_are_translated(language, words):
    row = AuditEntry(action="review_requested", label="production", from_version=1, to_version=None)
    with translation.override(language):
        assert versions_text(row) == words
