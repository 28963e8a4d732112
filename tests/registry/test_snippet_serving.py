"""Composed entries served from a label's catalog: `{{> name }}` follows the label the entry is served
from (else production), `{{> name@N }}` pins, snippets nest, and a snippet release re-resolves every
item that follows it; what a client is served is the fully expanded text."""

from __future__ import annotations

import json

import pytest

from registry import changes
from registry.models import ChangeLogEntry, Prompt, PromptMessage, Snippet, SnippetLabel
from registry.release import services
from registry.release.rollouts import set_rollout
from registry.serving.catalogs import catalog_for, entry_item, load_catalog, read_entries, refresh_catalog
from registry.serving.composed import SnippetUnavailable
from registry.serving.viewer import Viewer
from registry.storage.cache import cache
from tests.factories import make_prompt, make_resource, make_snippet, make_template, release

PRODUCTION_CLIENT = Viewer()
STAGING_CLIENT = Viewer(label="staging")


def new_version(snippet: Snippet, text: str, labels=("staging",)):
    Snippet.objects.filter(pk=snippet.pk).update(text=text)
    return release(Snippet.objects.get(pk=snippet.pk), note="new text", labels=labels)


def composed_prompt(name: str, text: str, labels=("production",), **fields) -> Prompt:
    prompt = make_prompt(name, messages=[{"role": "user", "kind": "text", "text": text}], **fields)
    release(prompt, labels=labels)
    return prompt


def text_of(viewer: Viewer, name: str, **arguments: str) -> str:
    served = catalog_for(viewer.label).get_prompt(viewer, name, arguments or {"topic": "owls"})
    return served.result["messages"][0]["content"]["text"]


def reload(label: str = "production"):
    """What a committed change does to this process (tests run in a transaction that never commits)."""
    changes.bump_generation()
    return load_catalog(label)


@pytest.fixture(autouse=True)
def _fresh_content_cache():
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def style(db):
    snippet = make_snippet("style", text="Be brief.")
    release(snippet)  # v1 on production
    new_version(snippet, "Be warm.")  # v2 on staging
    return snippet


def test_a_following_reference_gets_the_snippet_version_of_the_label_the_entry_is_served_from(style):
    composed_prompt("reply", "{{> style }} About {{ topic }}.", labels=("production", "staging"))
    assert text_of(PRODUCTION_CLIENT, "reply") == "Be brief. About owls."
    assert text_of(STAGING_CLIENT, "reply") == "Be warm. About owls."
    assert catalog_for("production").prompt_items["reply"].parts == (("style", 1),)
    assert catalog_for("staging").prompt_items["reply"].parts == (("style", 2),)


def test_an_entry_served_by_fallback_from_production_gets_the_production_snippet(style):
    composed_prompt("reply", "{{> style }} About {{ topic }}.")
    item = catalog_for("staging").prompt_items["reply"]
    assert (item.label, item.parts) == ("production", (("style", 1),))
    assert text_of(STAGING_CLIENT, "reply") == "Be brief. About owls."


def test_a_pinned_reference_keeps_its_version_and_has_no_parts(style):
    composed_prompt("pinned", "{{> style@2 }} About {{ topic }}.")
    assert text_of(PRODUCTION_CLIENT, "pinned") == "Be warm. About owls."
    assert catalog_for("production").prompt_items["pinned"].parts == ()
    services.move_label(style, label="production", version_number=2, acting_user=None)
    assert text_of(PRODUCTION_CLIENT, "pinned") == "Be warm. About owls."
    assert catalog_for("production").prompt_items["pinned"].parts == ()


def test_an_entry_without_references_stays_a_plain_item(db):
    composed_prompt("plain", "About {{ topic }}.")
    item = catalog_for("production").prompt_items["plain"]
    assert not item.composed and item.parts == ()
    assert not hasattr(item, "__dict__")  # slots only: nothing grows for entries that include nothing


def test_snippets_nest_and_every_following_level_is_a_part(db):
    release(make_snippet("signature", text="Regards."))
    house = make_snippet("house", text="Be brief. {{> signature }}")
    release(house)
    composed_prompt("reply", "{{> house }} About {{ topic }}.")
    assert text_of(PRODUCTION_CLIENT, "reply") == "Be brief. Regards. About owls."
    assert catalog_for("production").prompt_items["reply"].parts == (("house", 1), ("signature", 1))


def test_a_pinned_snippet_s_own_following_references_resolve_on_the_label(db):
    signature = make_snippet("signature", text="Regards.")
    release(signature)
    release(make_snippet("house", text="Be brief. {{> signature }}"))
    composed_prompt("reply", "{{> house@1 }} {{ topic }}")
    assert catalog_for("production").prompt_items["reply"].parts == (("signature", 1),)
    new_version(signature, "Cheers.", labels=("production",))
    reload()
    assert text_of(PRODUCTION_CLIENT, "reply") == "Be brief. Cheers. owls"


def test_an_argument_value_that_looks_like_a_reference_is_not_expanded(style):
    composed_prompt("reply", "{{> style }} About {{ topic }}.")
    assert text_of(PRODUCTION_CLIENT, "reply", topic="{{> style }}") == "Be brief. About {{> style }}."


def test_placeholders_a_snippet_brings_are_filled_from_the_prompt_s_arguments(db):
    release(make_snippet("tone", text="Write {{ topic }} warmly.", arguments=[{"name": "topic"}]))
    composed_prompt("reply", "{{> tone }}")
    assert text_of(PRODUCTION_CLIENT, "reply", topic="owls") == "Write owls warmly."


def test_a_snippet_with_no_version_to_serve_is_a_clear_error_for_that_entry_alone(db):
    release(make_snippet("ghost"), labels=("staging",))  # nothing on production, which the prompt follows
    composed_prompt("haunted", "{{> ghost }} {{ topic }}")
    composed_prompt("plain", "About {{ topic }}.")
    catalog = catalog_for("production")
    assert catalog.prompt_items["haunted"].parts == (("ghost", 0),)
    with pytest.raises(SnippetUnavailable, match="ghost has no version to serve"):
        catalog.get_prompt(PRODUCTION_CLIENT, "haunted", {"topic": "x"})
    assert text_of(PRODUCTION_CLIENT, "plain") == "About owls."


def test_a_text_resource_and_a_template_match_are_served_expanded(style):
    release(make_resource("docs://guide", text="Guide. {{> style }}"), labels=("production", "staging"))
    release(make_template("tickets://{id}", body="Ticket {{ id }}. {{> style }}"), labels=("production", "staging"))
    for viewer, expected in ((PRODUCTION_CLIENT, "Be brief."), (STAGING_CLIENT, "Be warm.")):
        catalog = catalog_for(viewer.label)
        assert catalog.read_resource(viewer, "docs://guide").result["contents"][0]["text"] == f"Guide. {expected}"
        assert catalog.read_resource(viewer, "tickets://7").result["contents"][0]["text"] == f"Ticket 7. {expected}"


def test_a_template_variable_that_looks_like_a_reference_is_not_expanded(style):
    release(make_template("tickets://{id}", body="Ticket {{ id }}."))
    served = catalog_for("production").read_resource(PRODUCTION_CLIENT, "tickets://%7B%7B%3E%20style%20%7D%7D")
    assert "Be brief" not in served.result["contents"][0]["text"]


def test_a_snippet_release_re_resolves_every_follower_on_refresh_not_only_the_changed_keys(style):
    composed_prompt("reply", "{{> style }} {{ topic }}")
    release(make_snippet("outer", text="Outer: {{> style }}"))
    composed_prompt("nested", "{{> outer }} {{ topic }}")
    composed_prompt("pinned", "{{> style@1 }} {{ topic }}")
    before = reload()
    pinned = before.prompt_items["pinned"]
    services.move_label(style, label="production", version_number=2, acting_user=None)
    after = refresh_catalog("production", [("snippet", "style")])  # the dependents' own keys left out
    assert after.prompt_items["reply"].parts == (("style", 2),)
    assert after.prompt_items["nested"].parts == (("outer", 1), ("style", 2))
    assert after.prompt_items["pinned"] is pinned
    assert text_of(PRODUCTION_CLIENT, "reply") == "Be warm. owls"
    assert text_of(PRODUCTION_CLIENT, "nested") == "Outer: Be warm. owls"


def test_rolling_a_snippet_back_serves_the_earlier_text_again(style):
    composed_prompt("reply", "{{> style }} {{ topic }}")
    services.move_label(style, label="production", version_number=2, acting_user=None)
    reload()
    assert text_of(PRODUCTION_CLIENT, "reply") == "Be warm. owls"
    services.move_label(style, label="production", version_number=1, acting_user=None)
    reload()
    assert text_of(PRODUCTION_CLIENT, "reply") == "Be brief. owls"


def test_partial_reads_resolve_like_the_whole_catalog(style):
    prompt = composed_prompt("reply", "{{> style }} {{ topic }}", labels=("production", "staging"))
    assert entry_item("staging", "prompt", prompt.pk).parts == (("style", 2),)
    part = read_entries("staging", {"prompt": [prompt.pk]})
    assert part.get_prompt(STAGING_CLIENT, "reply", {"topic": "x"}).result["messages"][0]["content"]["text"] \
        == "Be warm. x"


def test_a_rollout_candidate_resolves_its_references_on_the_rollout_s_label(style, publisher):
    prompt = composed_prompt("reply", "Plain {{ topic }}", labels=("production", "staging"))
    PromptMessage.objects.filter(prompt=prompt).update(text="{{> style }} {{ topic }}")
    release(Prompt.objects.get(pk=prompt.pk), labels=())
    set_rollout(prompt, label="staging", version_number=2, percent=50, acting_user=publisher)
    item = catalog_for("staging").prompt_items["reply"]
    assert item.parts == () and item.rollout.candidate.parts == (("style", 2),)


def test_a_snippet_s_tags_do_not_widen_who_sees_a_prompt(db):
    release(make_snippet("sales-pitch", text="Buy now.", tags="sales"))
    composed_prompt("support-reply", "{{> sales-pitch }} {{ topic }}", tags="support")
    sales = Viewer(scope_tags=frozenset({"sales"}))
    assert catalog_for("production").prompts(sales) == []
    assert [p["name"] for p in catalog_for("production").prompts(Viewer(scope_tags=frozenset({"support"})))] \
        == ["support-reply"]


def test_a_snippet_label_move_records_a_change_of_every_dependent_in_the_same_transaction(style):
    composed_prompt("reply", "{{> style }} {{ topic }}")
    release(make_resource("docs://guide", text="Guide. {{> style }}"))
    composed_prompt("pinned", "{{> style@1 }} {{ topic }}")
    after = ChangeLogEntry.objects.order_by("-pk").values_list("pk", flat=True).first()
    services.move_label(style, label="production", version_number=2, acting_user=None)
    rows = set(ChangeLogEntry.objects.filter(pk__gt=after).values_list("entry_kind", "entry_key", "label"))
    assert rows == {("snippet", "style", "production"), ("prompt", "reply", "production"),
                    ("resource", "docs://guide", "production")}


def test_a_plain_orm_label_save_of_a_snippet_records_its_dependents_too(style):
    composed_prompt("reply", "{{> style }} {{ topic }}", labels=("staging",))
    after = ChangeLogEntry.objects.order_by("-pk").values_list("pk", flat=True).first()
    label = style.labels.get(name="staging")
    label.version = style.versions.get(number=1)
    label.save()
    rows = set(ChangeLogEntry.objects.filter(pk__gt=after).values_list("entry_kind", "entry_key", "label"))
    assert ("prompt", "reply", "staging") in rows and ("snippet", "style", "staging") in rows


def test_recent_changes_list_the_dependents_a_snippet_release_changed_for_the_viewer_alone(style):
    composed_prompt("reply", "{{> style }} {{ topic }}", tags="support")
    composed_prompt("sales-reply", "{{> style }} {{ topic }}", tags="sales")
    composed_prompt("pinned", "{{> style@1 }} {{ topic }}", tags="support")
    services.move_label(style, label="production", version_number=2, acting_user=None)
    support = Viewer(scope_tags=frozenset({"support"}))
    served = reload().read_resource(support, "registry://changes/recent")
    changes = json.loads(served.result["contents"][1]["text"])["changes"]
    assert [(c["kind"], c["entry"], c["label"], c.get("snippet")) for c in changes if c.get("snippet")] == [
        ("prompt", "reply", "production", "style")]
    assert not any(c["kind"] == "snippet" for c in changes)


def test_snippet_labels_created_in_bulk_record_their_dependents(style):
    composed_prompt("reply", "{{> style }} {{ topic }}", labels=("production", "qa"))
    after = ChangeLogEntry.objects.order_by("-pk").values_list("pk", flat=True).first()
    SnippetLabel.objects.bulk_create([SnippetLabel(entry=style, name="qa", version=style.versions.get(number=2))])
    rows = set(ChangeLogEntry.objects.filter(pk__gt=after).values_list("entry_kind", "entry_key", "label"))
    assert ("prompt", "reply", "qa") in rows and ("snippet", "*", "qa") in rows
