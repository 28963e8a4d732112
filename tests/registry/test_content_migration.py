"""The data migration that moves inline bytes and base64 snapshots into the content store."""

from __future__ import annotations

import base64
import hashlib
import importlib

import pytest
from django.apps import apps as current_apps
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from registry.authoring.snapshots import content_hash
from registry.models import PromptMessage, PromptVersion, Resource, ResourceVersion
from registry.serving import catalogs
from registry.serving.viewer import Viewer
from registry.storage import blobs as content
from tests.factories import PNG_1X1

move = importlib.import_module("registry.migrations.0012_move_bytes_to_content_store")
BEFORE = ("registry", "0011_content_store_schema")
AFTER = ("registry", "0013_drop_inline_bytes")


@pytest.fixture(autouse=True)
def _back_to_the_latest_schema():
    """Going back to BEFORE also unapplies every later migration; leave the schema as the next test expects."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _old_registry() -> None:
    """Rows as the previous release wrote them: bytes in BinaryFields, base64 and text in snapshots."""
    executor = MigrationExecutor(connection)
    executor.migrate([BEFORE])
    old = MigrationExecutor(connection).loader.project_state([BEFORE]).apps
    Resource_, ResourceVersion_ = old.get_model("registry", "Resource"), old.get_model("registry", "ResourceVersion")
    Label_ = old.get_model("registry", "ResourceLabel")
    Prompt_, PromptMessage_ = old.get_model("registry", "Prompt"), old.get_model("registry", "PromptMessage")
    PromptVersion_, PromptLabel_ = old.get_model("registry", "PromptVersion"), old.get_model("registry", "PromptLabel")
    image = Resource_.objects.create(uri="docs://img", name="img", mime_type="image/png", data=PNG_1X1)
    snapshot = {"uri": "docs://img", "name": "img", "mimeType": "image/png", "size": len(PNG_1X1),
                "blob": base64.b64encode(PNG_1X1).decode()}
    version = ResourceVersion_.objects.create(entry=image, number=1, snapshot=snapshot,
                                              content_hash=content_hash(snapshot), change_note="v1", author_name="old")
    Label_.objects.create(entry=image, version=version, name="production")
    prompt = Prompt_.objects.create(name="old-prompt", description="d")
    PromptMessage_.objects.create(prompt=prompt, position=0, kind="image", mime_type="image/png", data=PNG_1X1)
    snapshot = {"name": "old-prompt", "description": "d", "arguments": [], "messages": [
        {"role": "user", "content": {"type": "image", "data": base64.b64encode(PNG_1X1).decode(),
                                     "mimeType": "image/png"}},
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "docs://inline", "text": "inline text"}}},
    ]}
    version = PromptVersion_.objects.create(entry=prompt, number=1, snapshot=snapshot,
                                            content_hash=content_hash(snapshot), change_note="v1", author_name="old")
    PromptLabel_.objects.create(entry=prompt, version=version, name="production")


@pytest.mark.django_db(transaction=True)
def test_migration_moves_bytes_into_the_store_and_serves_the_same_content():
    _old_registry()
    MigrationExecutor(connection).migrate([AFTER])
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())  # today's models read today's schema (later columns)

    sha = hashlib.sha256(PNG_1X1).hexdigest()
    version = ResourceVersion.objects.get(entry__uri="docs://img")
    assert "blob" not in version.snapshot and version.snapshot["sha256"] == sha
    assert version.content_hash == content_hash(version.snapshot) and version.listing["content"]["sha256"] == sha
    assert content.read(sha) == PNG_1X1
    assert Resource.objects.get(uri="docs://img").data == PNG_1X1
    assert PromptMessage.objects.get(prompt__name="old-prompt").data == PNG_1X1
    prompt_version = PromptVersion.objects.get(entry__name="old-prompt")
    assert prompt_version.listing["item"]["name"] == "old-prompt"

    served = catalogs.load_catalog("production")
    blob = served.read_resource(Viewer(), "docs://img").result["contents"][0]
    assert blob == {"uri": "docs://img", "mimeType": "image/png", "blob": base64.b64encode(PNG_1X1).decode()}
    messages = served.get_prompt(Viewer(), "old-prompt", {}).result["messages"]
    assert messages[0]["content"] == {"type": "image", "data": base64.b64encode(PNG_1X1).decode(),
                                      "mimeType": "image/png"}
    assert messages[1]["content"] == {"type": "resource", "resource": {"uri": "docs://inline", "text": "inline text"}}

    # Idempotent: running the rewrite again changes nothing.
    before = list(ResourceVersion.objects.values_list("snapshot", "content_hash"))
    move._rewrite(current_apps, move.forward_snapshot, with_listing=True)
    assert list(ResourceVersion.objects.values_list("snapshot", "content_hash")) == before


@pytest.mark.django_db(transaction=True)
def test_migration_back_inlines_the_bytes_again():
    _old_registry()
    MigrationExecutor(connection).migrate([AFTER])
    MigrationExecutor(connection).migrate([BEFORE])
    old = MigrationExecutor(connection).loader.project_state([BEFORE]).apps
    snapshot = old.get_model("registry", "ResourceVersion").objects.get().snapshot
    assert snapshot["blob"] == base64.b64encode(PNG_1X1).decode() and "sha256" not in snapshot
    assert bytes(old.get_model("registry", "Resource").objects.get().data) == PNG_1X1
    MigrationExecutor(connection).migrate([AFTER])
