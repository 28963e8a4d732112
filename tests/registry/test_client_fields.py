"""One list of the fields a client is served by (registry.models.clients.SERVED_FIELDS): the
Viewer a client stands for is built from them alone, and every reader of "did what this client
is served change" (bulk-update guard, token cache, stream re-check, audit) uses that list."""

from __future__ import annotations

import pytest

from registry.models import McpClient
from registry.models.clients import SERVED_FIELDS
from registry.release import receivers
from registry.serving import clients, credentials
from registry.serving.clients import create_client, still_serves, viewer_of

pytestmark = pytest.mark.django_db


def test_every_reader_of_what_a_client_is_served_uses_the_one_list():
    assert McpClient.objects.none().served_fields == frozenset(SERVED_FIELDS)
    assert receivers.served_changed is credentials.served_changed  # the token cache asks the one test
    assert credentials.SERVED_FIELDS is SERVED_FIELDS
    assert set(clients.AUDITED_FIELDS) == set(SERVED_FIELDS) - {"token_hash"} | {"description"}


def test_the_viewer_of_a_client_follows_from_its_served_fields_only():
    client, _raw = create_client(name="desk", label="staging", scope_tags="ops, HR")
    viewer = viewer_of(client)
    # Every field outside the list may change without changing the viewer.
    others = [f.name for f in McpClient._meta.concrete_fields if f.name not in SERVED_FIELDS and not f.primary_key]
    for name in others:
        value = getattr(client, name)
        setattr(client, name, "changed" if isinstance(value, str) else None)
    assert viewer_of(client) == viewer
    assert (viewer.label, viewer.scope_tags, viewer.client_name) == ("staging", frozenset({"ops", "hr"}), "desk")


@pytest.mark.parametrize("field, value", [("name", "front-desk"), ("label", "staging"), ("scope_tags", "ops"),
                                          ("active", False)])
def test_a_stream_opened_before_a_served_field_changed_is_no_longer_served(field, value):
    client, _raw = create_client(name="desk")
    opened = viewer_of(client)

    def serves() -> bool:
        clients.forget_cached_tokens()
        return still_serves(client.pk, label=opened.label, scope=opened.scope_tags, token_hash=client.token_hash,
                            name=opened.client_name)

    assert serves()
    setattr(client, field, value)
    client.save()
    assert not serves()


def test_a_client_save_reads_its_stored_row_once_for_every_receiver_of_it(django_capture_on_commit_callbacks):
    """Issue 20: the token cache's receiver and the stream re-check's each read the stored row
    before the save (two SELECTs per save); now one read serves both, and both still act."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from registry.signals import credentials_changed

    client, _raw = create_client(name="desk")
    told = []

    def listener(sender, client_ids, **kwargs):
        told.append(client_ids)

    credentials_changed.connect(listener, dispatch_uid="test-one-read")
    try:
        client.label = "staging"
        with CaptureQueriesContext(connection) as queries, django_capture_on_commit_callbacks() as callbacks:
            client.save()
    finally:
        credentials_changed.disconnect(dispatch_uid="test-one-read")
    table = McpClient._meta.db_table
    reads = [q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")
             and table in q["sql"]]
    assert len(reads) == 1, reads
    assert told == [[client.pk]]  # the stream re-check
    assert any(getattr(c, "__name__", "") == "forget_cached_tokens" for c in callbacks)  # the token cache


def test_a_save_of_no_served_field_reads_nothing_and_announces_nothing():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client, _raw = create_client(name="desk")
    client.description = "front desk"
    with CaptureQueriesContext(connection) as queries:
        client.save(update_fields=["description"])
    assert not [q for q in queries.captured_queries if q["sql"].lstrip().upper().startswith("SELECT")]
