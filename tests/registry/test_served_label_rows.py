"""Served label rows are read without their entries' rows: an entry row holds its whole draft
(a resource's text), so a join to it to leave archived entries out read a database page per
label row. Pins `LabelQuerySet.of_unarchived_entries` and the label index the pages' keyset
reads from (migration 0030)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from registry.kinds import KINDS
from registry.models import PromptLabel, ResourceLabel, ResourceTemplateLabel, SnippetLabel
from registry.release import services
from registry.serving import pages
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_snippet, make_template
from tests.registry.test_catalog_pages import _db_pages, registry_mix  # noqa: F401  # the fixture

LABEL_MODELS = (PromptLabel, ResourceLabel, ResourceTemplateLabel, SnippetLabel)
only_sqlite = pytest.mark.skipif(connection.vendor != "sqlite", reason="reads SQLite's query plans; "
                                 "PostgreSQL's keyset index is migration 0018's, pinned by test_pagination_cold")


def _entry_table(label_model) -> str:
    return label_model._meta.get_field("entry").related_model._meta.db_table


def _archive(entry) -> None:
    entry.archived_at = timezone.now()
    entry.save()


@pytest.fixture
def live_and_archived(db):
    """Of each kind one published entry and one published, then archived."""
    makers = (make_prompt, lambda n: make_resource(f"docs://{n}"), lambda n: make_template(f"docs://{n}/{{id}}"),
              make_snippet)
    for make in makers:
        services.publish(make("live"), acting_user=None, note="test")
        archived = make("gone")
        services.publish(archived, acting_user=None, note="test")
        _archive(archived)


@pytest.mark.django_db
@pytest.mark.parametrize("label_model", LABEL_MODELS, ids=lambda m: m.__name__)
def test_label_rows_of_archived_entries_are_left_out_without_a_join_to_the_entries(live_and_archived, label_model):
    rows = label_model.objects.filter(name="production").of_unarchived_entries()
    assert sorted(rows.values_list("entry__archived_at", flat=True)) == [None]
    assert label_model.objects.filter(name="production").count() == 2
    assert f'JOIN "{_entry_table(label_model)}"' not in str(rows.query)


@pytest.mark.django_db
def test_a_cold_page_reads_no_entry_row(registry_mix):  # noqa: F811
    for kind, method in (("prompt", "prompts"), ("resource", "resources")):
        with CaptureQueriesContext(connection) as queries:
            _db_pages("production", kind, method, Viewer())
        entry_table = _entry_table(KINDS[kind].label_model)
        assert queries.captured_queries
        assert not [q["sql"] for q in queries.captured_queries if f'JOIN "{entry_table}"' in q["sql"]], kind


@only_sqlite
@pytest.mark.django_db
@pytest.mark.parametrize("kind", ["prompt", "resource"])
def test_a_pages_keyset_is_read_from_the_label_index_alone_in_order(live_and_archived, kind):
    plan = (pages._served("production", kind).filter(sort_key__gt="").order_by("sort_key", "entry_id")
            .values_list("entry_id", "sort_key").explain())
    assert f"COVERING INDEX {kind}label_by_key" in plan, plan
    assert "TEMP B-TREE" not in plan, plan  # no sort: the index holds (name, served key, entry id) in order
    assert f"COVERING INDEX registry_{kind}_archived_at" in plan, plan  # the archived ids, from their index


@only_sqlite
@pytest.mark.django_db(transaction=True)
def test_indexing_archived_at_leaves_the_entry_tables_as_they_are():
    """SQLite alters a field by copying its table: for the entry tables, every draft. Migration 0030
    creates the index alone, so each entry table keeps its definition (a copy would move the column)."""
    from django.db.migrations.executor import MigrationExecutor

    tables = [f"registry_{name}" for name in ("prompt", "resource", "resourcetemplate", "snippet")]

    def definitions() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name IN (%s, %s, %s, %s) "
                           "ORDER BY name", tables)
            return [row[0] for row in cursor.fetchall()]

    executor = MigrationExecutor(connection)
    executor.migrate([("registry", "0029_label_served_projection")])
    try:
        before = definitions()
        MigrationExecutor(connection).migrate([("registry", "0030_label_keys_cover_entry")])
        assert definitions() == before
        with connection.cursor() as cursor:
            indexed = {table for table, in cursor.execute(
                "SELECT tbl_name FROM sqlite_master WHERE type = 'index' AND sql LIKE '%(archived_at)'")}
        assert indexed == set(tables)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(executor.loader.graph.leaf_nodes())
