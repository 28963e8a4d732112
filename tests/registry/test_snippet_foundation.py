"""Snippet references: parsed and expanded purely, indexed at publish by who uses what."""

from __future__ import annotations

import pytest

from registry.errors import TemplateSyntaxError
from registry.formats.references import ExpansionError, Reference, expand, references_in, without_references
from registry.models import EntryUse
from registry.release.uses import dependents, including_snippets, used_by
from tests.factories import make_prompt, make_resource, make_snippet, release


def test_references_follow_or_pin_and_keep_their_line():
    assert references_in("a\n{{> style }} and {{>facts@3}}") == [Reference("style", None, 2), Reference("facts", 3, 2)]


@pytest.mark.parametrize("text", ["{{> }}", "{{> bad name }}", "{{> style@0 }}", "{{> style@x }}"])
def test_a_malformed_reference_is_a_syntax_error_with_its_line(text):
    with pytest.raises(TemplateSyntaxError) as caught:
        references_in("first line\n" + text)
    assert caught.value.line == 2


def test_expansion_is_recursive_and_refuses_cycles_and_depth():
    texts = {"a": "A{{> b }}", "b": "B{{> c@2 }}", "c": "C"}
    assert expand("x {{> a }} y", lambda name, pin: texts.get(name)) == "x ABC y"
    with pytest.raises(ExpansionError, match="includes itself"):
        expand("{{> a }}", lambda name, pin: {"a": "{{> b }}", "b": "{{> a }}"}[name])
    deep = {f"s{i}": f"{{{{> s{i + 1} }}}}" for i in range(7)} | {"s7": "end"}
    with pytest.raises(ExpansionError, match="deeper than 5"):
        expand("{{> s0 }}", lambda name, pin: deep[name])
    with pytest.raises(ExpansionError, match="no version"):
        expand("{{> gone }}", lambda name, pin: None)


def test_placeholders_are_checked_without_the_references():
    assert without_references("{{> style }} about {{ topic }}") == " about {{ topic }}"


@pytest.mark.django_db
def test_publishing_indexes_the_snippets_and_resources_a_version_uses():
    style = make_snippet("style")
    release(style)
    doc = make_resource("docs://guide", text="Guide. {{> style }}")
    release(doc)
    text = "{{> style }} {{> style@1 }} {{ topic }}"
    prompt = make_prompt("reply", messages=[{"role": "user", "kind": "text", "text": text},
                                            {"role": "user", "kind": "resource", "resource": doc}])
    version = release(prompt)
    assert version.snapshot["includes"] == ["style", "style@1"]
    uses = set(EntryUse.objects.filter(user_version_id=version.pk, user_kind="prompt").values_list(
        "used_kind", "used_key", "pinned"))
    assert uses == {("snippet", "style", None), ("snippet", "style", 1), ("resource", "docs://guide", None)}
    found = {(u.kind, u.key, u.pinned, tuple(u.labels)) for u in used_by("snippet", "style")}
    assert found == {("prompt", "reply", None, ("production",)), ("prompt", "reply", 1, ("production",)),
                     ("resource", "docs://guide", None, ("production",))}
    assert [(u.kind, u.key) for u in used_by("resource", "docs://guide")] == [("prompt", "reply")]
    assert dependents("style", "production") == [("prompt", "reply", "production"),
                                                 ("resource", "docs://guide", "production")]
    assert dependents("style", "staging") == []


@pytest.mark.django_db
def test_dependents_reach_through_snippets_that_include_the_snippet():
    release(make_snippet("inner"))
    release(make_snippet("outer", text="Outer {{> inner }}"))
    release(make_prompt("p", messages=[{"role": "user", "kind": "text", "text": "{{> outer }} {{ topic }}"}]))
    assert including_snippets(["inner"]) == {"inner", "outer"}
    assert dependents("inner", "production") == [("prompt", "p", "production")]
