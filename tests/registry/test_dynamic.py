"""Built-in dynamic resources: listed, read as Markdown and JSON, and scoped to what a viewer may see."""

from __future__ import annotations

import json

import pytest

from registry import dynamic, services
from registry.catalog import Viewer, catalog_for
from registry.errors import UnknownResource
from registry.models import PromptMessage
from tests.factories import make_prompt, make_template

RECENT = "registry://changes/recent"
CHANGELOG = "registry://prompts/{name}/changelog"
ANYONE = Viewer()
BILLING = Viewer(scope_tags=frozenset({"billing"}))


def publish(entry, note="test", labels=("production",)):
    return services.publish(entry, acting_user=None, actor="editor-ann", note=note, labels=labels)


def contents(viewer, uri):
    served = catalog_for(viewer.label).read_resource(viewer, uri)
    markdown, data = served.result["contents"]
    assert markdown["mimeType"] == "text/markdown" and data["mimeType"] == "application/json"
    assert markdown["uri"] == data["uri"] == uri
    return markdown["text"], json.loads(data["text"])


@pytest.mark.django_db
def test_dynamic_resources_are_listed_for_every_viewer():
    publish(make_prompt("general"))
    for viewer in (ANYONE, BILLING):
        catalog = catalog_for("production")
        assert RECENT in [r["uri"] for r in catalog.resources(viewer)]
        listed = [t for t in catalog.templates(viewer) if t["uriTemplate"] == CHANGELOG]
        assert listed and listed[0]["mimeType"] == "text/markdown" and listed[0]["title"]


@pytest.mark.django_db
def test_recent_changes_reads_as_markdown_and_json_newest_first():
    prompt = make_prompt("greet")
    publish(prompt, note="first cut")
    PromptMessage.objects.filter(prompt=prompt).update(text="Hello {{ topic }}")
    publish(prompt, note="friendlier | wording")
    markdown, data = contents(ANYONE, RECENT)
    newest = data["changes"][0]
    assert newest["entry"] == "greet" and newest["version"] == 2 and newest["author"] == "editor-ann"
    assert {c["note"] for c in data["changes"]} >= {"first cut", "friendlier | wording"}
    assert all(c["time"] for c in data["changes"])
    assert "friendlier \\| wording" in markdown and "| greet |" in markdown


@pytest.mark.django_db
def test_recent_changes_keeps_the_last_fifty():
    prompt = make_prompt("busy")
    for n in range(dynamic.RECENT_CHANGES):  # two rows each (publish + label move)
        PromptMessage.objects.filter(prompt=prompt).update(text=f"Take {n} {{{{ topic }}}}")
        publish(prompt, note=f"take {n}")
    _markdown, data = contents(ANYONE, RECENT)
    assert len(data["changes"]) == dynamic.RECENT_CHANGES
    assert data["changes"][0]["version"] == dynamic.RECENT_CHANGES


@pytest.mark.django_db
def test_scoped_viewer_sees_only_changes_of_entries_in_its_scope():
    publish(make_prompt("billing-help", tags="billing"), note="billing note")
    publish(make_prompt("general"), note="secret general note")
    markdown, data = contents(BILLING, RECENT)
    assert {c["entry"] for c in data["changes"]} == {"billing-help"}
    assert "general" not in markdown and "secret general note" not in markdown
    _markdown, everything = contents(ANYONE, RECENT)
    assert {c["entry"] for c in everything["changes"]} == {"billing-help", "general"}


@pytest.mark.django_db
def test_prompt_changelog_lists_versions_with_the_labels_serving_them():
    prompt = make_prompt("greet")
    publish(prompt, note="first cut")
    PromptMessage.objects.filter(prompt=prompt).update(text="Hello {{ topic }}")
    publish(prompt, note="second cut", labels=("staging",))
    markdown, data = contents(ANYONE, "registry://prompts/greet/changelog")
    assert data["prompt"] == "greet"
    assert [(v["version"], v["labels"], v["note"], v["author"]) for v in data["versions"]] == [
        (2, ["staging"], "second cut", "editor-ann"), (1, ["production"], "first cut", "editor-ann")]
    assert all(v["date"] for v in data["versions"])
    assert "Changelog of prompt greet" in markdown and "second cut" in markdown


@pytest.mark.django_db
def test_out_of_scope_or_unknown_prompt_changelog_is_not_found():
    publish(make_prompt("general"))
    catalog = catalog_for("production")
    with pytest.raises(UnknownResource):
        catalog.read_resource(BILLING, "registry://prompts/general/changelog")
    with pytest.raises(UnknownResource):
        catalog.read_resource(ANYONE, "registry://prompts/nobody/changelog")
    assert catalog.readable(ANYONE, "registry://prompts/general/changelog")
    assert not catalog.readable(BILLING, "registry://prompts/general/changelog")
    assert catalog.readable(BILLING, RECENT)


@pytest.mark.django_db
def test_a_stored_template_of_the_same_uri_template_wins_over_the_provider():
    publish(make_template(CHANGELOG, body="Stored log of {{ name }}"))
    publish(make_prompt("greet"))
    catalog = catalog_for("production")
    served = catalog.read_resource(ANYONE, "registry://prompts/greet/changelog")
    assert served.kind == "template" and served.result["contents"][0]["text"] == "Stored log of greet"
    assert [t["uriTemplate"] for t in catalog.templates(ANYONE)].count(CHANGELOG) == 1


@pytest.mark.django_db
def test_reads_are_recomputed_after_a_change(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        publish(make_prompt("greet"))
    _markdown, before = contents(ANYONE, RECENT)
    with django_capture_on_commit_callbacks(execute=True):
        publish(make_prompt("other"))
    _markdown, after = contents(ANYONE, RECENT)
    assert len(after["changes"]) > len(before["changes"]) and after["changes"][0]["entry"] == "other"


def test_a_provider_rejects_an_unknown_cache_scope():
    with pytest.raises(ValueError):
        dynamic.provider(uri="registry://x", title="x", mime_type="text/plain", cache_scope="shared")


@pytest.mark.django_db
def test_changelog_template_completes_the_prompt_names_a_viewer_may_see():
    publish(make_prompt("billing-help", tags="billing"))
    publish(make_prompt("general"))
    catalog = catalog_for("production")
    ref = {"type": "ref/resource", "uri": CHANGELOG}
    assert catalog.complete(ANYONE, ref, "name", "")["values"] == ["billing-help", "general"]
    assert catalog.complete(BILLING, ref, "name", "")["values"] == ["billing-help"]
    assert catalog.complete(ANYONE, ref, "name", "gen")["values"] == ["general"]
