from datetime import UTC, datetime

import pytest

from registry.models import FetchCounter
from registry.serving import fetches
from registry.serving.items import Served
from registry.serving.viewer import Viewer


@pytest.mark.django_db
def test_fetches_are_counted_per_client_entry_and_version_on_flush():
    served = Served({}, "prompt", "greet", 3, "production")
    desk = Viewer(client_id=None, client_name="desk")
    for _ in range(3):
        fetches.record_fetch(served, desk)
    fetches.record_fetch(served, Viewer())
    assert FetchCounter.objects.count() == 0  # nothing written on the request path
    assert fetches.flush() == 2
    fetches.record_fetch(served, desk)
    fetches.flush()
    counts = {(c.client_name, c.version): c.count for c in FetchCounter.objects.all()}
    assert counts == {("desk", 3): 4, ("", 3): 1}


@pytest.mark.django_db(transaction=True)
def test_a_deleted_client_neither_blocks_nor_double_counts_the_others():
    from registry.serving.clients import create_client

    client, _ = create_client(name="gone-soon")
    served = Served({}, "prompt", "greet", 1, "production")
    fetches.record_fetch(served, Viewer())
    fetches.record_fetch(served, Viewer(client_id=client.pk, client_name="gone-soon"))
    client.delete()
    for _ in range(3):
        fetches.flush()
    counts = {(c.client_name, c.client_id): c.count for c in FetchCounter.objects.all()}
    assert counts == {("", None): 1, ("gone-soon", None): 1}


def _serve(viewer, name="greet"):
    from registry.serving.catalogs import forget_catalogs, load_catalog

    forget_catalogs()  # the test's transaction never commits, so nothing retires the catalog
    fetches.record_fetch(load_catalog(viewer.label).get_prompt(viewer, name, {"topic": "x"}), viewer)
    fetches.flush()


@pytest.mark.django_db
def test_the_admin_counts_a_renamed_drafts_fetches_under_the_name_it_is_served_as(editor, publisher):
    """Issue 20: the counters are written under the served name; the admin read them by the draft's,
    so after a rename not yet published the history and rollout pages showed no fetches."""
    from registry.admin.fetch_stats import served_by_client, served_by_version
    from tests.factories import make_prompt, release

    prompt = make_prompt("greet")
    release(prompt)
    desk = Viewer(client_id=None, client_name="desk")
    _serve(desk)
    _serve(desk)
    prompt.name = "greeting"  # the draft only: production still serves it as greet
    prompt.save()
    assert [(s.client_name, s.total) for s in served_by_client(prompt)] == [("desk", 2)]
    assert [(v["version"], v["total"], v["clients"]) for v in served_by_version(prompt)] == [(1, 2, 1)]


@pytest.mark.django_db
def test_the_counters_of_a_version_published_under_a_new_name_are_read_under_that_name(editor, publisher):
    """Each version's counters are read by the key that version is served as, and another entry's
    counters under a name this one never served are not read as its own."""
    from registry.serving.fetches import counters_for
    from tests.factories import make_prompt, release

    prompt = make_prompt("greet")
    release(prompt)
    desk = Viewer(client_id=None, client_name="desk")
    _serve(desk)
    prompt.name = "greeting"
    prompt.save()
    release(prompt, note="renamed")
    _serve(desk, "greeting")
    other = make_prompt("hello")
    release(other)
    _serve(desk, "hello")
    assert sorted((c.entry_key, c.version) for c in counters_for(prompt)) == [("greet", 1), ("greeting", 2)]
    assert [(c.entry_key, c.version) for c in counters_for(other)] == [("hello", 1)]


def _conflict_target(sql: str) -> list[str]:
    target = sql.split("ON CONFLICT (", 1)[1].split(")", 1)[0]
    return [column.strip().strip('"`') for column in target.split(",")]


def test_the_batch_upsert_conflicts_on_the_unique_key_the_model_declares():
    """Issue 20: the conflict target was a second copy of the constraint's field list."""
    from registry.models import FetchCounter

    (constraint,) = FetchCounter._meta.constraints
    assert fetches.unique_fields() == tuple(constraint.fields)
    assert _conflict_target(fetches.upsert_sql()) == [FetchCounter._meta.get_field(f).column
                                                      for f in constraint.fields]


@pytest.mark.django_db
def test_a_changed_unique_key_changes_the_upsert_and_the_row_lookup(monkeypatch):
    """Both write paths follow the model's one definition: drop a field from it and neither the
    batch statement nor the row-by-row lookup still names it."""
    from django.db.models import UniqueConstraint

    from registry.models import FetchCounter

    narrower = UniqueConstraint(fields=["client_name", "entry_kind", "entry_key", "version"], name="narrower")
    monkeypatch.setattr(FetchCounter._meta, "constraints", [narrower])
    assert _conflict_target(fetches.upsert_sql()) == ["client_name", "entry_kind", "entry_key", "version"]
    looked_up = []

    class Rows:
        def filter(self, **lookup):
            looked_up.append(sorted(lookup))
            return self

        def update(self, **_fields):
            return 1

    monkeypatch.setattr(FetchCounter, "objects", Rows())
    fetches._upsert((None, "desk", "prompt", "greet", 1, "production"), 1, datetime.now(UTC))
    assert looked_up == [["client_name", "entry_key", "entry_kind", "version"]]
