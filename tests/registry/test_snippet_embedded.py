"""A prompt that embeds a registry resource whose text includes snippets: its snapshot block carries
the resource version's `includes` (and the prompt's `includes` unions them), so the prompt is a
dependent of those snippets, and what a client is served is the resource text expanded on the
label the prompt is served from, like the prompt's own texts."""

from __future__ import annotations

import pytest

from registry import changes
from registry.authoring.composition import db_resolver, expand_snapshot
from registry.authoring.snapshots import content_hash, snapshot_prompt
from registry.models import ChangeLogEntry, Prompt, Resource, Snippet
from registry.release import services, uses
from registry.serving.catalogs import catalog_for, load_catalog
from registry.serving.viewer import Viewer
from registry.storage.cache import cache
from tests.factories import make_prompt, make_resource, make_snippet, release

PRODUCTION_CLIENT = Viewer()
STAGING_CLIENT = Viewer(label="staging")


@pytest.fixture(autouse=True)
def _fresh_content_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def signature(db):
    """Snippet 'signature' v1 on production, v2 on staging; resource docs://guide including it."""
    snippet = make_snippet("signature", text="Regards.")
    release(snippet)
    Snippet.objects.filter(pk=snippet.pk).update(text="Cheers.")
    release(Snippet.objects.get(pk=snippet.pk), labels=("staging",))
    release(make_resource("docs://guide", text="Guide. {{> signature }}"))
    return snippet


def embedding_prompt(name: str = "reply", labels=("production",)) -> Prompt:
    prompt = make_prompt(name, messages=[
        {"role": "user", "kind": "text", "text": "About {{ topic }}."},
        {"role": "user", "kind": "resource", "resource": Resource.objects.get(uri="docs://guide")}])
    release(prompt, labels=labels)
    return prompt


def embedded_text(viewer: Viewer, name: str = "reply") -> str:
    served = catalog_for(viewer.label).get_prompt(viewer, name, {"topic": "owls"})
    return served.result["messages"][1]["content"]["resource"]["text"]


def test_an_embedded_resource_s_snippets_are_expanded_in_prompts_get(signature):
    embedding_prompt()
    assert embedded_text(PRODUCTION_CLIENT) == "Guide. Regards."


def test_an_embedded_resource_follows_the_label_the_prompt_is_served_from(signature):
    embedding_prompt(labels=("production", "staging"))
    assert embedded_text(STAGING_CLIENT) == "Guide. Cheers."
    assert catalog_for("staging").prompt_items["reply"].parts == (("signature", 2),)


def test_the_embedded_block_carries_the_resource_version_s_includes_and_the_prompt_unions_them(signature):
    prompt = embedding_prompt()
    snapshot = prompt.versions.get().snapshot
    assert snapshot["messages"][1]["content"]["includes"] == ["signature"]
    assert snapshot["includes"] == ["signature"]
    assert [(use.kind, use.key) for use in uses.used_by("snippet", "signature")] == [
        ("prompt", "reply"), ("resource", "docs://guide")]


def test_a_snippet_label_move_changes_the_embedded_text_and_records_the_dependent_prompt(signature):
    embedding_prompt()
    assert embedded_text(PRODUCTION_CLIENT) == "Guide. Regards."
    assert ("prompt", "reply", "production") in uses.dependents("signature", "production")
    after = ChangeLogEntry.objects.order_by("-pk").values_list("pk", flat=True).first()
    services.move_label(signature, label="production", version_number=2, acting_user=None)
    rows = set(ChangeLogEntry.objects.filter(pk__gt=after).values_list("entry_kind", "entry_key", "label"))
    assert ("prompt", "reply", "production") in rows
    changes.bump_generation()  # what the committed move does to this process
    load_catalog("production")
    assert catalog_for("production").prompt_items["reply"].parts == (("signature", 2),)
    assert embedded_text(PRODUCTION_CLIENT) == "Guide. Cheers."


def test_a_pinned_reference_in_an_embedded_resource_stays_pinned(db):
    snippet = make_snippet("signature", text="Regards.")
    release(snippet)
    Snippet.objects.filter(pk=snippet.pk).update(text="Cheers.")
    release(Snippet.objects.get(pk=snippet.pk), labels=("staging",))
    release(make_resource("docs://guide", text="Guide. {{> signature@1 }}"))
    embedding_prompt(labels=("production", "staging"))
    assert embedded_text(STAGING_CLIENT) == "Guide. Regards."
    assert catalog_for("staging").prompt_items["reply"].parts == ()


def test_what_the_downstream_view_shows_of_the_prompt_is_the_expanded_embedded_text(signature):
    snapshot = embedding_prompt().versions.get().snapshot
    served = expand_snapshot("prompt", snapshot, db_resolver("production"))
    assert served["messages"][1]["content"]["resource"]["text"] == "Guide. Regards."
    after = expand_snapshot("prompt", snapshot, db_resolver("production", overrides={"signature": 2}))
    assert after["messages"][1]["content"]["resource"]["text"] == "Guide. Cheers."


def test_a_prompt_embedding_a_resource_without_references_keeps_its_snapshot_and_content_hash(db):
    release(make_resource("docs://plain", text="Plain guide."))
    prompt = make_prompt("plain", messages=[
        {"role": "user", "kind": "text", "text": "About {{ topic }}."},
        {"role": "user", "kind": "resource", "resource": Resource.objects.get(uri="docs://plain")}])
    snapshot = snapshot_prompt(prompt)
    assert snapshot == {
        "name": "plain", "description": "A prompt for tests",
        "arguments": [{"name": "topic", "required": True}],
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "About {{ topic }}."}},
            {"role": "user", "content": {"type": "resource", "resource": {
                "uri": "docs://plain", "mimeType": "text/plain", "encoding": "text", "size": 12,
                "sha256": "1cafd1f8e600394316d249c545ebd74f260bfa3af9a63af8898b3b9c68320a82"}}}]}
    assert content_hash(snapshot) == "139d5908f32f2ad2d7301790f29e423d3ba4312cdece9a763a3ea6836a3d04ea"
