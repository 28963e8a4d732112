"""A request that `reviews.staleness` finds stale is shown stale everywhere before anyone acts
(issue 23): the change list's badge, the entry page, the review page and the review queue."""

from __future__ import annotations

import re

import pytest

from registry.release import reviews
from tests.factories import make_prompt
from tests.registry.test_admin import client_for, prompt_post, url

pytestmark = pytest.mark.django_db


def _queue_row(page: str, pk: int) -> str:
    """The review queue's table row of request `pk`."""
    rows = [row for row in re.findall(r"<tr>.*?</tr>", page, re.S) if f"#{pk}</a>" in row]
    assert len(rows) == 1, page
    return rows[0]


def _status_cell(page: str) -> str:
    return re.search(r'<th>Status</th><td>(.*?)</td>', page, re.S).group(1)


def test_editing_a_never_published_draft_under_review_shows_the_request_stale_everywhere(
        client, editor, publisher):
    prompt = make_prompt("fresh")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    client_for(client, editor)
    saved = client.post(url("prompt_change", prompt.pk),
                        {**prompt_post(prompt, description="Edited after the request"),
                         "draft_revision": prompt.revision})
    assert saved.status_code == 302

    listing = client.get(url("prompt_changelist")).content.decode()
    assert f"review #{review.pk} (production) is stale: the draft changed" in listing
    entry_page = client.get(url("prompt_change", prompt.pk)).content.decode()
    assert f"review #{review.pk} (production) is stale: the draft changed" in entry_page
    assert f"Review #{review.pk} is stale: the draft of fresh changed after the request" in entry_page
    assert "asks a publisher to release this draft" not in entry_page  # no longer true

    client_for(client, publisher)
    review_page = client.get(url("reviewrequest_change", review.pk)).content.decode()
    status = _status_cell(review_page)
    assert "Waiting for a reviewer" not in status
    assert "Stale: it can no longer be approved as asked" in status
    assert 'value="approve"' not in review_page
    row = _queue_row(client.get(url("reviewrequest_changelist")).content.decode(), review.pk)
    assert "Waiting for a reviewer" not in row
    assert "registry-badge-stale" in row and "Stale: it can no longer be approved as asked" in row


def test_a_request_that_can_be_approved_still_waits_for_a_reviewer(client, editor, publisher):
    prompt = make_prompt("waiting")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    client_for(client, publisher)
    row = _queue_row(client.get(url("reviewrequest_changelist")).content.decode(), review.pk)
    assert "Waiting for a reviewer" in row and "registry-badge-stale" not in row
    review_page = client.get(url("reviewrequest_change", review.pk)).content.decode()
    assert "Waiting for a reviewer" in _status_cell(review_page)
    assert 'value="approve"' in review_page
