"""Typed prompt arguments through the registry: publish checks, snapshots, the served listing,
rendering with every refusal reported at once, completion, and draft round trips."""

from __future__ import annotations

import pytest

from registry.authoring.drafts import apply_snapshot, draft_data, normalised
from registry.authoring.snapshots import content_hash, snapshot_of
from registry.authoring.validation import validate_prompt
from registry.errors import ArgumentErrors, InvalidEntry, MissingArguments
from registry.formats.rendering import render_prompt
from registry.models import PromptArgument
from registry.release import services
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_template, make_typed_prompt

pytestmark = pytest.mark.django_db
ANYONE = Viewer()
GOOD = {"tone": "warm", "count": "7", "code": "AB-12"}


def publish(entry):
    return services.publish(entry, acting_user=None, note="test", labels=("production",))


def test_snapshot_carries_types_and_bounds_in_json_schema_words():
    args = {a["name"]: a for a in snapshot_of(make_typed_prompt())["arguments"]}
    assert args["tone"] == {"name": "tone", "description": "Tone of the reply", "required": True, "type": "enum",
                            "choices": ["formal", "warm"]}
    assert args["count"] == {"name": "count", "required": True, "type": "integer", "minimum": 1, "maximum": 10}
    assert args["ratio"]["minimum"] == 0 and args["ratio"]["default"] == "0.5"
    assert args["code"] == {"name": "code", "required": True, "type": "string", "minLength": 3, "maxLength": 8,
                            "pattern": "[A-Z]+-[0-9]+"}
    assert args["doc"] == {"name": "doc", "required": False, "type": "resource"}


def test_untyped_arguments_keep_their_snapshot_and_content_hash():
    prompt = make_prompt("plain", arguments=[{"name": "topic", "required": True, "description": "d"}])
    snapshot = snapshot_of(prompt)
    assert snapshot["arguments"] == [{"name": "topic", "description": "d", "required": True}]
    # The hash of the same content before types existed (computed on the code without them).
    assert content_hash(snapshot) == content_hash({
        "name": "plain", "description": "A prompt for tests",
        "arguments": [{"name": "topic", "description": "d", "required": True}],
        "messages": [{"role": "user", "content": {"type": "text", "text": "Tell me about {{ topic }}."}}]})


def test_render_reports_every_bad_and_missing_argument_with_its_reason():
    snapshot = snapshot_of(make_typed_prompt())
    with pytest.raises(ArgumentErrors) as caught:
        render_prompt(snapshot, {"tone": "cheerful", "count": "11", "ratio": "2", "short": "maybe",
                                 "code": "ab", "doc": "not a uri"})
    assert caught.value.missing == []
    reasons = {i["name"]: i["reason"] for i in caught.value.invalid}
    assert reasons == {
        "tone": "must be one of: formal, warm",
        "count": "must be a whole number from 1 to 10",
        "ratio": "must be a number from 0 to 1",
        "short": "must be true or false",
        "code": "must be at least 3 characters long (got 2)",
        "doc": reasons["doc"],
    }
    assert reasons["doc"].startswith("must be the URI of a registry resource")


def test_render_lists_missing_and_invalid_together():
    snapshot = snapshot_of(make_typed_prompt())
    with pytest.raises(ArgumentErrors) as caught:
        render_prompt(snapshot, {"tone": "warm", "count": "x"})
    assert caught.value.missing == ["code"]
    assert caught.value.invalid == [{"name": "count", "reason": "must be a whole number from 1 to 10"}]
    assert not isinstance(caught.value, MissingArguments)


def test_render_of_good_values_uses_their_plain_form_and_defaults():
    result = render_prompt(snapshot_of(make_typed_prompt()), {**GOOD, "count": "+7", "short": "TRUE"})
    assert result["messages"][0]["content"]["text"] == "warm x7 r0.5 strue cAB-12 d"


def test_served_listing_describes_the_constraints_for_text_only_clients():
    publish(make_typed_prompt())
    listed = {a["name"]: a for a in catalog_for("production").prompts(ANYONE)[0]["arguments"]}
    assert listed["tone"] == {"name": "tone", "description": "Tone of the reply (one of: formal, warm)",
                              "required": True}
    assert listed["count"]["description"] == "A whole number from 1 to 10"
    assert listed["code"]["description"] == "A single line, 3 to 8 characters, matching the pattern [A-Z]+-[0-9]+"
    assert listed["doc"] == {"name": "doc", "description": "The URI of a registry resource", "required": False}


def test_resource_arguments_must_name_a_resource_the_viewer_can_read():
    make_resource("docs://style", text="Be brief.", tags="style")
    publish(make_resource("docs://style-2", text="x"))
    from registry.models import Resource

    publish(Resource.objects.get(uri="docs://style"))
    publish(make_template("tickets://{id}", body="Ticket {{ id }}"))
    publish(make_typed_prompt(tags="other"))
    catalog = catalog_for("production")
    for uri in ("docs://style", "tickets://42"):
        served = catalog.get_prompt(ANYONE, "typed-reply", {**GOOD, "doc": uri})
        assert served.result["messages"][0]["content"]["text"].endswith("d" + uri)
    with pytest.raises(ArgumentErrors) as caught:
        catalog.get_prompt(ANYONE, "typed-reply", {**GOOD, "doc": "docs://nothing-here"})
    assert "there is none with this URI" in caught.value.invalid[0]["reason"]
    scoped = Viewer(scope_tags=frozenset({"other"}))
    with pytest.raises(ArgumentErrors):  # outside the viewer's scope: not readable, so not accepted
        catalog.get_prompt(scoped, "typed-reply", {**GOOD, "doc": "docs://style"})


def test_completion_offers_enum_choices_booleans_and_registry_resource_uris():
    publish(make_resource("docs://style", text="x"))
    publish(make_resource("docs://secret", text="x", tags="secret"))
    publish(make_typed_prompt())
    publish(make_prompt("scoped-typed", tags="public", arguments=[{"name": "doc", "type": "resource"}],
                        messages=[{"role": "user", "kind": "text", "text": "{{ doc }}"}]))
    catalog = catalog_for("production")
    ref = {"type": "ref/prompt", "name": "typed-reply"}
    assert catalog.complete(ANYONE, ref, "tone", "")["values"] == ["formal", "warm"]
    assert catalog.complete(ANYONE, ref, "tone", "w")["values"] == ["warm"]
    assert catalog.complete(ANYONE, ref, "short", "t")["values"] == ["true"]
    assert catalog.complete(ANYONE, ref, "doc", "docs://")["values"] == ["docs://secret", "docs://style"]
    scoped = Viewer(scope_tags=frozenset({"public"}))
    completed = catalog.complete(scoped, {"type": "ref/prompt", "name": "scoped-typed"}, "doc", "")
    assert completed["values"] == []  # completion never reveals resources outside the client's scope


def test_publish_refuses_broken_declarations_naming_the_argument():
    prompt = make_prompt("broken", arguments=[
        {"name": "tone", "type": "enum"},
        {"name": "count", "type": "integer", "minimum": 5, "maximum": 2, "required": False, "default": "x"},
        {"name": "code", "pattern": r"(a)\1"},
    ], messages=[{"role": "user", "kind": "text", "text": "{{ tone }} {{ count }} {{ code }}"}])
    report = validate_prompt(prompt)
    assert "Argument 'tone': an argument of type enum needs at least one choice." in report.errors
    assert "Argument 'count': the minimum 5 is larger than the maximum 2." in report.errors
    assert any(e.startswith("Argument 'code': the pattern") for e in report.errors)
    with pytest.raises(InvalidEntry):
        publish(prompt)
    assert not prompt.versions.exists()


def test_a_default_of_the_wrong_type_and_an_unknown_default_resource_are_refused():
    prompt = make_prompt("defaults", arguments=[
        {"name": "flag", "type": "boolean", "required": False, "default": "yes"},
        {"name": "doc", "type": "resource", "required": False, "default": "docs://missing"},
    ], messages=[{"role": "user", "kind": "text", "text": "{{ flag }} {{ doc }}"}])
    errors = validate_prompt(prompt).errors
    assert "Argument 'flag': the default 'yes' must be true or false." in errors
    assert any(e.startswith("Argument 'doc': the default 'docs://missing' must be the URI") for e in errors)


def test_draft_data_and_snapshot_data_round_trip_the_types():
    prompt = make_typed_prompt()
    data = draft_data(prompt)
    count = next(a for a in data["arguments"] if a["name"] == "count")
    assert count | {} == {**count, "type": "integer", "minimum": 1, "maximum": 10, "choices": [], "pattern": ""}
    version = publish(prompt)
    PromptArgument.objects.filter(prompt=prompt).update(type="text", choices="", minimum=None, maximum=None,
                                                        min_length=None, max_length=None, pattern="")
    apply_snapshot(prompt, version.snapshot)
    assert snapshot_of(prompt) == version.snapshot
    assert normalised(draft_data(prompt)) == normalised(data)


def test_untyped_draft_data_compares_equal_to_data_without_type_keys():
    prompt = make_prompt("plain")
    assert normalised({"arguments": [{"name": "topic", "title": "", "description": "", "required": True,
                                      "default": "", "suggestions": []}]})["arguments"] \
        == normalised(draft_data(prompt))["arguments"]
