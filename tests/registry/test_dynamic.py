"""Built-in dynamic resources: listed, read as Markdown and JSON, and scoped to what a viewer may see."""

from __future__ import annotations

import json

import pytest

from registry import changes
from registry.errors import UnknownResource
from registry.formats import buckets
from registry.models import PromptMessage
from registry.release import reviews, rollouts, services
from registry.serving import dynamic
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
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
def test_recent_changes_reads_as_markdown_and_json_newest_first(settings):
    settings.REGISTRY = {**settings.REGISTRY, "SHOW_NAMES_TO_CLIENTS": True}
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
    for n in range(dynamic.RECENT_CHANGES + 5):  # one label move each
        PromptMessage.objects.filter(prompt=prompt).update(text=f"Take {n} {{{{ topic }}}}")
        publish(prompt, note=f"take {n}")
    _markdown, data = contents(ANYONE, RECENT)
    assert len(data["changes"]) == dynamic.RECENT_CHANGES
    assert data["changes"][0]["version"] == dynamic.RECENT_CHANGES + 5


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
def test_prompt_changelog_lists_the_versions_the_clients_label_served_with_the_one_serving_now(settings):
    settings.REGISTRY = {**settings.REGISTRY, "SHOW_NAMES_TO_CLIENTS": True}
    prompt = make_prompt("greet")
    publish(prompt, note="first cut")
    PromptMessage.objects.filter(prompt=prompt).update(text="Hello {{ topic }}")
    publish(prompt, note="second cut")
    markdown, data = contents(ANYONE, "registry://prompts/greet/changelog")
    assert data["prompt"] == "greet"
    assert [(v["version"], v["labels"], v["note"], v["author"]) for v in data["versions"]] == [
        (2, ["production"], "second cut", "editor-ann"), (1, [], "first cut", "editor-ann")]
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


# ------------------------------------------------------------------- what a client may read of history

STAGING = Viewer(label="staging")


def changelog(viewer, name="greet"):
    return contents(viewer, f"registry://prompts/{name}/changelog")


def edited(prompt, text):
    PromptMessage.objects.filter(prompt=prompt).update(text=text)
    return prompt


@pytest.mark.django_db
def test_a_production_client_sees_nothing_of_versions_only_staging_served():
    prompt = make_prompt("greet")
    publish(prompt, note="first cut")
    publish(edited(prompt, "Hello {{ topic }}"), note="secret staging experiment", labels=("staging",))
    for uri in ("registry://prompts/greet/changelog", RECENT):
        markdown, data = contents(ANYONE, uri)
        assert "secret staging experiment" not in markdown + json.dumps(data)
    _markdown, log = changelog(ANYONE)
    assert [v["version"] for v in log["versions"]] == [1]
    _markdown, recent = contents(ANYONE, RECENT)
    assert {(c["label"], c["version"]) for c in recent["changes"]} == {("production", 1)}
    _markdown, staged = changelog(STAGING)  # the staging client was served v2 from its own label
    assert [v["version"] for v in staged["versions"]] == [2]


@pytest.mark.django_db
def test_a_rollback_shows_the_version_served_again_not_the_incident_reason(publisher):
    prompt = make_prompt("greet")
    publish(prompt, note="first cut")
    publish(edited(prompt, "Hello {{ topic }}"), note="second cut")
    services.rollback(prompt, acting_user=publisher, note="v2 leaks customer emails (incident 7)", to_version=1)
    for uri in ("registry://prompts/greet/changelog", RECENT):
        markdown, data = contents(ANYONE, uri)
        assert "incident 7" not in markdown + json.dumps(data)
    _markdown, recent = contents(ANYONE, RECENT)
    assert [(c["action"], c["version"], c["note"]) for c in recent["changes"]] == [
        ("rollback", 1, "first cut"), ("label_move", 2, "second cut"), ("label_move", 1, "first cut")]


@pytest.mark.django_db
def test_names_of_authors_and_approvers_reach_clients_only_when_the_setting_allows(settings, editor, publisher):
    prompt = make_prompt("greet")
    review = reviews.request_publication(prompt, acting_user=editor, note="ready")
    reviews.approve(review, acting_user=publisher)
    names = (editor.username, publisher.username)
    for uri in ("registry://prompts/greet/changelog", RECENT):
        markdown, data = contents(ANYONE, uri)
        assert not any(name in markdown + json.dumps(data) for name in names), uri
        assert "Author" not in markdown
    _markdown, log = changelog(ANYONE)
    assert log["versions"][0]["note"] == f"ready (approved in review #{review.pk})"
    assert "author" not in log["versions"][0]

    settings.REGISTRY = {**settings.REGISTRY, "SHOW_NAMES_TO_CLIENTS": True}
    changes.bump_generation()
    _markdown, log = changelog(ANYONE)
    assert log["versions"][0]["author"] == editor.username
    assert f"approved by {publisher.username}" in log["versions"][0]["note"]


@pytest.mark.django_db
def test_versions_whose_tags_do_not_admit_the_client_are_left_out_of_its_history():
    prompt = make_prompt("greet", tags="hr")
    publish(prompt, note="hr-only wording")
    prompt.tags = "billing"
    prompt.save()
    publish(prompt, note="billing wording")
    for uri in ("registry://prompts/greet/changelog", RECENT):
        markdown, data = contents(BILLING, uri)
        assert "hr-only wording" not in markdown + json.dumps(data)
    _markdown, log = changelog(BILLING)
    assert [v["version"] for v in log["versions"]] == [2]


def _client_names(prompt_name, percent):
    """A client name inside a rollout of `percent` and one outside it."""
    names = [f"client-{n}" for n in range(200)]
    inside = next(n for n in names if buckets.gets_candidate(n, prompt_name, percent))
    outside = next(n for n in names if not buckets.gets_candidate(n, prompt_name, percent))
    return inside, outside


@pytest.mark.django_db
def test_a_rollout_candidate_is_in_the_history_of_the_clients_that_get_it_only():
    prompt = make_prompt("greet")
    publish(prompt, note="first cut")
    publish(edited(prompt, "Hello {{ topic }}"), note="candidate wording", labels=())
    rollouts.set_rollout(prompt, label="production", version_number=2, percent=50, acting_user=None)
    inside, outside = _client_names("greet", 50)
    for name, expected in ((inside, [2, 1]), (outside, [1])):  # the first read must not be served to the second
        viewer = Viewer(client_name=name)
        _markdown, log = changelog(viewer)
        assert [v["version"] for v in log["versions"]] == expected, name
        _markdown, recent = contents(viewer, RECENT)
        assert ("candidate wording" in json.dumps(recent)) == (name == inside)
