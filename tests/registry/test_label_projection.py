"""Label rows carry a projection of their version; cold pages read it instead of the version
rows, and never serve one that went stale."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.test.utils import CaptureQueriesContext

from registry.errors import BulkUpdateRefused
from registry.models import (
    PromptLabel,
    PromptMessage,
    PromptVersion,
    ResourceLabel,
    ResourceTemplateLabel,
    ResourceVersion,
    SnippetLabel,
)
from registry.models.base import served_projection
from registry.release import services
from registry.serving import pages as catalog_pages
from registry.serving.catalogs import load_catalog
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_snippet, make_template, make_user
from tests.registry.test_catalog_pages import _db_pages, registry_mix  # noqa: F401  # the fixture

LABEL_MODELS = (PromptLabel, ResourceLabel, ResourceTemplateLabel, SnippetLabel)
projection_backfill = importlib.import_module("registry.migrations.0029_label_served_projection")


def _stale_rows() -> list[str]:
    return [f"{model.__name__} {label.pk}" for model in LABEL_MODELS
            for label in model.objects.select_related("version")
            if label.served != served_projection(label.version)]


@pytest.mark.django_db
def test_every_path_that_points_a_label_leaves_the_projection_of_its_version(registry_mix):  # noqa: F811
    publisher = make_user(None)  # a superuser: may move every label
    prompt = make_prompt("moved-around")
    services.publish(prompt, acting_user=None, note="v1")
    PromptMessage.objects.filter(prompt=prompt).update(text="Second take on {{ topic }}.")
    services.publish(prompt, acting_user=None, note="v2", labels=("production", "staging"))
    services.move_label(prompt, label="staging", version_number=1, acting_user=publisher)
    services.rollback(prompt, label="production", to_version=1, acting_user=publisher, note="back")
    services.publish(make_snippet("footer"), acting_user=None, note="v1")
    version = PromptVersion.objects.get(entry=prompt, number=2)
    PromptLabel.objects.bulk_create([PromptLabel(entry=prompt, version=version, name="canary")])
    assert PromptLabel.objects.filter(name="canary").get().served == served_projection(version)
    assert not _stale_rows()


@pytest.mark.django_db
def test_the_projection_is_refused_to_queryset_updates():
    with pytest.raises(BulkUpdateRefused):
        PromptLabel.objects.update(served="[]")


@pytest.mark.django_db
def test_a_cold_page_reads_no_version_row(registry_mix):  # noqa: F811
    for kind in ("prompt", "resource"):
        with CaptureQueriesContext(connection) as queries:
            _db_pages("production", kind, {"prompt": "prompts", "resource": "resources"}[kind], Viewer())
        version_table = {"prompt": PromptVersion, "resource": ResourceVersion}[kind]._meta.db_table
        assert queries.captured_queries
        assert not [q["sql"] for q in queries.captured_queries if version_table in q["sql"]], kind


@pytest.mark.django_db
@pytest.mark.parametrize("written_around_the_model", [
    "UPDATE {table} SET served = ''",  # rows from before the projection, or raw inserts
    "UPDATE {table} SET served = 'not json'",
    # pointed at another version without its projection: the one the row names is served
    "UPDATE {table} SET version_id = (SELECT MIN(v.id) FROM {versions} v WHERE v.entry_id = {table}.entry_id)",
])
def test_a_missing_or_stale_projection_is_read_from_the_version(registry_mix, written_around_the_model):  # noqa: F811
    for model, versions in ((PromptLabel, PromptVersion), (ResourceLabel, ResourceVersion)):
        with connection.cursor() as cursor:
            cursor.execute(written_around_the_model.format(table=model._meta.db_table,
                                                           versions=versions._meta.db_table))
    for viewer in (Viewer(), Viewer(label="staging"), Viewer(scope_tags=frozenset({"billing"}))):
        whole = load_catalog(viewer.label)
        assert _db_pages(viewer.label, "prompt", "prompts", viewer)[0] == whole.prompts(viewer)
        assert _db_pages(viewer.label, "resource", "resources", viewer)[0] == whole.resources(viewer)


@pytest.mark.django_db
def test_a_projected_page_lists_what_the_whole_catalog_lists(registry_mix):  # noqa: F811
    part = catalog_pages.page_catalog("production", "resource", Viewer(), None, 100)
    whole = load_catalog("production")
    assert part.partial
    assert part.resources(Viewer()) == whole.resources(Viewer())  # lastModified included


@pytest.mark.django_db
def test_existing_label_rows_get_the_projection_of_their_version():
    entries = (make_prompt("projected"), make_resource("docs://projected"), make_template("items://{id}"),
               make_snippet("projected-snippet"))
    for entry in entries:
        services.publish(entry, acting_user=None, note="v1")
    with connection.cursor() as cursor:  # as before the column existed
        for model in LABEL_MODELS:
            cursor.execute(f"UPDATE {model._meta.db_table} SET served = ''")
    assert len(_stale_rows()) == len(entries)

    historical = MigrationLoader(connection).project_state(("registry", "0029_label_served_projection")).apps
    projection_backfill.forwards(historical, connection.schema_editor())

    assert not _stale_rows()


@pytest.mark.django_db
def test_a_fixture_restore_takes_the_projection_from_the_version_as_loaded():
    """Django's serialiser keeps milliseconds of a version's creation time: a restored label row
    keeping its dumped projection would list another lastModified than its version."""
    from django.core import serializers

    services.publish(make_resource("docs://restored"), acting_user=None, note="v1")
    version = ResourceVersion.objects.get()
    label = ResourceLabel.objects.get()
    dumped = serializers.serialize("json", [version, label])
    with connection.cursor() as cursor:  # the version as a restore writes it: milliseconds only
        cursor.execute(f"DELETE FROM {ResourceLabel._meta.db_table}")
    for restored in serializers.deserialize("json", dumped):
        if isinstance(restored.object, ResourceVersion):
            with connection.cursor() as cursor:
                cursor.execute(f"UPDATE {ResourceVersion._meta.db_table} SET created_at = %s WHERE id = %s",
                               [restored.object.created_at, version.pk])
        else:
            restored.save()  # a raw save, as loaddata's
    assert not _stale_rows()
    whole = load_catalog("production")
    assert _db_pages("production", "resource", "resources", Viewer())[0] == whole.resources(Viewer())
