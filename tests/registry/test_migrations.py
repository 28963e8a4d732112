"""Data migrations that rewrite what is recorded (never what is served)."""

from __future__ import annotations

import importlib
import json

import pytest
from django.db import connection
from django.db.migrations.loader import MigrationLoader

from registry.authoring.snapshots import content_hash, snapshot_of
from registry.models import PromptVersion, ReviewRequest
from registry.release import services
from tests.factories import make_prompt, make_user

pytestmark = pytest.mark.django_db

tags_in_snapshots = importlib.import_module("registry.migrations.0005_tags_in_snapshots")


def _as_before_tags_were_versioned(version: PromptVersion) -> None:
    old = {k: v for k, v in version.snapshot.items() if k != "tags"}
    with connection.cursor() as cursor:  # versions are insert-only in the ORM: rewind with plain SQL
        cursor.execute(f"UPDATE {PromptVersion._meta.db_table} SET snapshot = %s, content_hash = %s WHERE id = %s",
                       [json.dumps(old), content_hash(old), version.pk])


def test_existing_versions_and_pending_reviews_get_the_tags_they_were_served_with():
    prompt = make_prompt("tagged", tags="billing, ops")
    version = services.publish(prompt, acting_user=None, note="v1")
    _as_before_tags_were_versioned(version)
    prompt.description = "Changed"
    prompt.save()
    review = ReviewRequest.objects.create(
        entry_kind="prompt", entry_id=prompt.pk, entry_key=prompt.key, label="production",
        snapshot={k: v for k, v in snapshot_of(prompt).items() if k != "tags"}, content_hash="old",
        requested_by_name=make_user("Editors").username, note="please")

    historical = MigrationLoader(connection).project_state(("registry", "0005_tags_in_snapshots")).apps
    tags_in_snapshots.forwards(historical, None)

    version = PromptVersion.objects.get(pk=version.pk)
    assert version.snapshot["tags"] == ["billing", "ops"]
    assert version.content_hash == content_hash(version.snapshot)
    review.refresh_from_db()
    assert review.content_hash == content_hash(snapshot_of(prompt))  # still approvable as requested


listed_uris = importlib.import_module("registry.migrations.0016_normalise_listed_uris")


def test_resource_versions_published_before_normalisation_list_the_served_uri():
    from registry.models import ResourceVersion
    from registry.serving.catalogs import load_catalog
    from registry.serving.viewer import Viewer
    from tests.factories import make_resource

    version = services.publish(make_resource("docs://Upper/%7ea"), acting_user=None, note="v1")
    listing = dict(version.listing, item={**version.listing["item"], "uri": "DOCS://Upper/%7ea"},
                   content={**version.listing["content"], "uri": "DOCS://Upper/%7ea"})
    with connection.cursor() as cursor:  # versions are insert-only in the ORM: rewind with plain SQL
        cursor.execute(f"UPDATE {ResourceVersion._meta.db_table} SET listing = %s WHERE id = %s",
                       [json.dumps(listing), version.pk])

    historical = MigrationLoader(connection).project_state(("registry", "0016_normalise_listed_uris")).apps
    listed_uris.forwards(historical, None)

    served = next(r["uri"] for r in load_catalog("production").resources(Viewer()) if r["uri"].startswith("docs"))
    listed = ResourceVersion.objects.get(pk=version.pk).listing
    assert listed["item"]["uri"] == listed["content"]["uri"] == served


label_keys = importlib.import_module("registry.migrations.0017_label_served_key")


def test_existing_label_rows_get_the_key_their_version_is_served_under():
    from registry.models import PromptLabel, ResourceLabel, ResourceTemplateLabel
    from tests.factories import make_resource, make_template

    for entry in (make_prompt("keyed"), make_resource("docs://keyed"), make_template("items://{id}")):
        services.publish(entry, acting_user=None, note="v1")
    models = (PromptLabel, ResourceLabel, ResourceTemplateLabel)
    with connection.cursor() as cursor:  # as before the column existed
        for model in models:
            cursor.execute(f"UPDATE {model._meta.db_table} SET served_key = ''")

    historical = MigrationLoader(connection).project_state(("registry", "0017_label_served_key")).apps
    label_keys.forwards(historical, None)

    assert [m.objects.get().served_key for m in models] == ["keyed", "docs://keyed", "items://{id}"]
