"""Every entry change list runs the same number of queries for a page of 5 rows as for 50 (issue 23),
with any of its filters chosen (issue 22: folder, tag, label served, state, kind).

Each row carries the states its badges show (a changed draft, a pending request for the draft,
a rollout, staging ahead of production), so a badge that asks the database per row is caught.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from registry.models import Resource
from registry.release import reviews, rollouts
from tests.factories import make_prompt, make_resource, make_template, release
from tests.registry.test_admin import client_for, url

pytestmark = pytest.mark.django_db


def _busy(entry, index: int, editor, change_draft) -> None:
    """v1 on production; some rows also a v2 on staging, a 10% rollout, a changed draft, a request."""
    release(entry, note="v1")
    if index % 2:
        change_draft(entry, f"second {index}")
        release(entry, note="v2", labels=("staging",))
        rollouts.set_rollout(entry, label="production", version_number=2, percent=10, acting_user=None, note="try")
    if index % 3 == 0:
        change_draft(entry, f"third {index}")
        reviews.request_publication(entry, acting_user=editor, note="please", label="production")


def _change_prompt(prompt, text: str) -> None:
    message = prompt.messages.first()
    message.text = f"{text} {{{{ topic }}}}"
    message.save()


def _change_description(entry, text: str) -> None:
    entry.description = text
    entry.save()


def _prompt(index: int):
    guide = Resource.objects.filter(uri="docs://guide").first() or make_resource("docs://guide", text="Be kind.")
    return make_prompt(f"p-{index:03}", messages=[
        {"role": "user", "kind": "text", "text": "About {{ topic }}."},
        {"role": "user", "kind": "resource", "resource": guide},  # an embedded registry resource
    ])


KINDS = {
    "prompt": (_prompt, _change_prompt),
    "resource": (lambda i: make_resource(f"docs://d-{i:03}", text=f"Doc {i}"), _change_description),
    "resourcetemplate": (lambda i: make_template(f"t{i:03}://{{id}}", suggestions={"id": ["a", "b"]}),
                         _change_description),
}


def _list_queries(client, kind: str, params: dict[str, str] | None = None) -> int:
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url(f"{kind}_changelist"), params or {})
    assert response.status_code == 200
    return len(queries)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_change_list_page_runs_the_same_queries_for_5_rows_as_for_50(client, editor, kind):
    make, change_draft = KINDS[kind]
    client_for(client, editor)
    for index in range(5):
        _busy(make(index), index, editor, change_draft)
    few = _list_queries(client, kind)
    for index in range(5, 50):
        _busy(make(index), index, editor, change_draft)
    many = _list_queries(client, kind)
    page = client.get(url(f"{kind}_changelist")).content.decode()
    assert "draft changed since v" in page and "in review #" in page and "rolling out v2 to 10%" in page
    assert many == few, f"{few} queries for 5 rows, {many} for 50"


# Every filter of the entry lists (registry/admin/filters.py), alone and all at once.
FILTERS = [{"folder": "support"}, {"folder": "/"}, {"tag": "faq"}, {"served_label": "staging"},
           {"served_label": "-"}, *({"state": tone} for tone in ("changed", "review", "rollout", "scheduled", "stale")),
           {"folder": "support", "tag": "faq", "served_label": "production", "state": "changed"}]
KIND_FILTERS = {"prompt": [{"content_kind": "resource"}], "resource": [{"content_kind": "text"}],
                "resourcetemplate": []}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_a_filtered_change_list_runs_the_same_queries_for_5_rows_as_for_50(client, editor, publisher, kind):
    make, change_draft = KINDS[kind]

    def filed(index: int):
        entry = make(index)
        entry.folder = ("support/billing", "support", "")[index % 3]
        entry.tags = "faq" if index % 2 else "other"
        entry.save()
        return entry

    def busy(entry, index: int) -> None:
        _busy(entry, index, editor, change_draft)
        if index % 4 == 0:  # a release of the draft to staging scheduled for tomorrow
            review = reviews.request_publication(entry, acting_user=editor, note="later", label="staging")
            reviews.approve(review, acting_user=publisher, go_live_at=timezone.now() + timedelta(days=1))
        if index % 8 == 2:  # a request for a changed draft to staging, made stale by another edit
            change_draft(entry, f"before the request {index}")
            reviews.request_publication(entry, acting_user=editor, note="please", label="staging")
            change_draft(entry, f"after the request {index}")

    def rows(params: dict[str, str]) -> int:
        return client.get(url(f"{kind}_changelist"), params).context["cl"].result_count

    chosen = ({"folder": "support", "state": "changed"}, {"state": "scheduled"}, {"state": "stale"})

    client_for(client, editor)
    for index in range(5):
        busy(filed(index), index)
    filters = [*FILTERS, *KIND_FILTERS[kind]]
    few = [_list_queries(client, kind, params) for params in filters]
    few_rows = [rows(params) for params in chosen]
    for index in range(5, 50):
        busy(filed(index), index)
    many = [_list_queries(client, kind, params) for params in filters]
    # These filters chose more rows of the 50 than of the 5 (and some of the 5), so a per-row query would show.
    many_rows = [rows(params) for params in chosen]
    assert all(0 < f < m for f, m in zip(few_rows, many_rows, strict=True)), (few_rows, many_rows)
    assert many == few, f"{list(zip(filters, few, many, strict=True))}"


def _request(index: int, editor) -> None:
    """A request for a draft (every third one made stale by an edit) or for a published version."""
    prompt = _prompt(100 + index)
    if index % 2:
        release(prompt, note="v1", labels=("staging",))
        reviews.request_publication(prompt, acting_user=editor, note="v1 please", label="production",
                                    version_number=1)
        return
    reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    if index % 3 == 0:
        _change_prompt(prompt, "after the request")


def test_the_review_queue_runs_the_same_queries_for_5_requests_as_for_50(client, editor, publisher):
    client_for(client, publisher)
    for index in range(5):
        _request(index, editor)
    few = _list_queries(client, "reviewrequest")
    for index in range(5, 50):
        _request(index, editor)
    many = _list_queries(client, "reviewrequest")
    page = client.get(url("reviewrequest_changelist")).content.decode()
    assert "Stale: it can no longer be approved as asked" in page and "Waiting for a reviewer" in page
    assert many == few, f"{few} queries for 5 requests, {many} for 50"


@pytest.mark.parametrize("kind", ["promptlabel", "promptversion", "resourcelabel", "resourceversion"])
def test_the_version_and_label_lists_run_the_same_queries_for_5_entries_as_for_50(client, superuser, kind):
    make = _prompt if kind.startswith("prompt") else (lambda i: make_resource(f"docs://v-{i:03}", text=f"Doc {i}"))
    client_for(client, superuser)
    for index in range(5):
        release(make(index), note="v1", labels=("production", "staging"))
    few = _list_queries(client, kind)
    for index in range(5, 50):
        release(make(index), note="v1", labels=("production", "staging"))
    many = _list_queries(client, kind)
    assert many == few, f"{few} queries for 5 entries, {many} for 50"


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_filter_choices_read_each_distinct_value_once_not_a_row_per_entry(client, editor, kind):
    """The folder and tag choices are SELECT DISTINCT of their one column: the model's default
    ordering joined its own column to the DISTINCT (one row per entry), and at 20,000 resources
    reading those rows was most of the list's first byte."""
    make, _change = KINDS[kind]
    for index in range(6):
        entry = make(index)
        entry.folder, entry.tags = "support", "faq, billing"
        entry.save()
    client_for(client, editor)
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url(f"{kind}_changelist")).status_code == 200
    distinct = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("SELECT DISTINCT")]
    choices = [sql for sql in distinct if '."folder"' in sql.split(" FROM ")[0] or '."tags"' in sql.split(" FROM ")[0]]
    assert len(choices) == 2, distinct
    for sql in choices:
        assert sql.split(" FROM ")[0].count(",") == 0, sql  # one column selected
    with connection.cursor() as cursor:
        cursor.execute(choices[0])
        assert len(cursor.fetchall()) == 1  # six entries, one folder
