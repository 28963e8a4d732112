"""The admin tells what is true now: a rollback after an approval, what the History page may do."""

from __future__ import annotations

import pytest
from django.urls import reverse

from registry.release import reviews, services
from tests.factories import make_prompt, release
from tests.registry.test_admin import client_for, edit_first_message, url

pytestmark = pytest.mark.django_db


def _approved_then_rolled_back(editor, publisher, second_publisher):
    """v1 on production; the editor's request for v2 approved; then an incident rollback to v1."""
    prompt = make_prompt("refunds")
    release(prompt, note="v1")
    edit_first_message(prompt, "Second take on {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="new wording", label="production")
    reviews.approve(review, acting_user=second_publisher)
    services.rollback(prompt, acting_user=publisher, note="v2 gives wrong refund amounts", to_version=1)
    return prompt, review


# ------------------------------------------------------------------------------ told of a rollback


def test_the_requesters_home_says_their_approved_release_was_rolled_back_and_why(client, editor, publisher,
                                                                                 second_publisher):
    _prompt, review = _approved_then_rolled_back(editor, publisher, second_publisher)
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    row = page[page.index(f"#{review.pk}</a>"):]
    row = row[:row.index("</tr>")]
    assert "v2 is served" not in row
    assert f"approved by {second_publisher.username}: v2 was served" in row
    assert f"“production” serves v1 now: {publisher.username} rolled it back from v2" in row
    assert "(an incident rollback)" in row and "because: “v2 gives wrong refund amounts”" in row


def test_the_requesters_home_still_says_served_while_nothing_moved(client, editor, second_publisher):
    prompt = make_prompt("steady")
    release(prompt, note="v1")
    edit_first_message(prompt, "Second take on {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="new wording", label="production")
    reviews.approve(review, acting_user=second_publisher)
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    assert f"approved by {second_publisher.username}: v2 is served" in page
    assert "rolled it back" not in page


def test_the_entry_page_says_what_is_served_after_a_rollback_and_why(client, editor, publisher, second_publisher):
    prompt, _review = _approved_then_rolled_back(editor, publisher, second_publisher)
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert 'class="registry-warning registry-rolled-back"' in page
    assert f"“production” serves v1 now: {publisher.username} rolled it back from v2" in page
    assert "because: “v2 gives wrong refund amounts”" in page


def test_the_entry_page_says_nothing_of_rollbacks_once_the_label_moved_on(client, editor, publisher,
                                                                           second_publisher):
    prompt, _review = _approved_then_rolled_back(editor, publisher, second_publisher)
    edit_first_message(prompt, "Third take on {{ topic }}.")
    release(prompt, note="v3 fixed")
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "registry-rolled-back" not in page


@pytest.mark.parametrize(("language", "expected"), [
    ("de", "„production“ stellt jetzt v1 bereit"), ("zh-hans", "“production”现在提供 v1")])
def test_the_rollback_is_told_in_the_editors_language(client, editor, publisher, second_publisher, language,
                                                      expected):
    from registry.models import EditorPreference

    _approved_then_rolled_back(editor, publisher, second_publisher)
    EditorPreference.objects.create(user=editor, language=language)
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    assert expected in page
