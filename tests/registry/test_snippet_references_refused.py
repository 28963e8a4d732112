"""Broken snippet references are refused at publish and import, with the field, line and reason."""

from __future__ import annotations

import pytest
from django.utils import timezone

from registry.authoring.validation import validate_entry
from registry.errors import InvalidEntry
from registry.models import PromptMessage, Resource, Snippet
from registry.release import services
from tests.factories import make_prompt, make_resource, make_snippet, make_template, release

pytestmark = pytest.mark.django_db


def prompt_with(text: str, arguments=None):
    prompt = make_prompt("support-reply", arguments=arguments if arguments is not None else [{"name": "topic"}])
    PromptMessage.objects.filter(prompt=prompt).update(text=text)
    return prompt


def errors(entry) -> list:
    return validate_entry(type(entry).objects.get(pk=entry.pk)).errors


def test_a_reference_to_a_missing_snippet_is_refused_with_message_and_line():
    (problem,) = errors(prompt_with("About {{ topic }}.\n{{> nowhere }}"))
    assert (problem.where, problem.code) == ("message:1", "snippet_reference")
    assert "Line 2" in problem and "'nowhere' does not exist" in problem


def test_a_reference_to_an_archived_or_unpublished_snippet_is_refused():
    make_snippet("draft-only")
    prompt = prompt_with("{{ topic }} {{> draft-only }}")
    (problem,) = errors(prompt)
    assert "no published version" in problem
    snippet = Snippet.objects.get(name="draft-only")
    snippet.archived_at = timezone.now()
    snippet.save()
    (problem,) = errors(prompt)
    assert "archived" in problem


def test_a_pinned_version_that_does_not_exist_is_refused():
    release(make_snippet("house-style"))
    (problem,) = errors(prompt_with("{{ topic }} {{> house-style@4 }}"))
    assert "has no version 4" in problem
    assert errors(prompt_with_new("{{ topic }} {{> house-style@1 }}")) == []


def prompt_with_new(text: str):
    prompt = make_prompt(arguments=[{"name": "topic"}])
    PromptMessage.objects.filter(prompt=prompt).update(text=text)
    return prompt


def test_a_snippet_that_would_include_itself_is_refused_as_a_circle():
    first = make_snippet("first", text="one")
    release(first)
    second = make_snippet("second", text="two {{> first }}")
    release(second)
    first.text = "one {{> second }}"
    first.save()
    (problem,) = errors(first)
    assert problem.where == "text" and "circle (first → second → first)" in problem


def test_snippets_nested_deeper_than_five_levels_are_refused():
    release(make_snippet("level-1", text="bottom"))
    for n in range(2, 7):
        release(make_snippet(f"level-{n}", text=f"up {{{{> level-{n - 1} }}}}"))
    assert errors(prompt_with_new("{{ topic }} {{> level-5 }}")) == []
    (problem,) = errors(prompt_with("{{ topic }} {{> level-6 }}"))
    assert "more than 5 levels" in problem


def test_a_snippet_argument_the_prompt_does_not_declare_or_types_otherwise_is_refused():
    release(make_snippet("tone-line", text="Be {{ tone }}.", arguments=[{"name": "tone", "type": "enum"}]))
    (problem,) = errors(prompt_with("{{ topic }} {{> tone-line }}"))
    assert problem.code == "snippet_argument" and "declare an argument" in problem and "tone" in problem
    (problem,) = errors(prompt_with_typed("text"))
    assert "of type enum, not text" in problem
    assert errors(prompt_with_typed("enum")) == []


def prompt_with_typed(kind: str):
    arguments = [{"name": "topic"}, {"name": "tone", "type": kind}]
    if kind == "enum":
        arguments[1]["choices"] = "warm\nformal"
    prompt = make_prompt(arguments=arguments)
    PromptMessage.objects.filter(prompt=prompt).update(text="{{ topic }} {{ tone }} {{> tone-line }}")
    return prompt


def test_a_resource_may_include_only_snippets_without_arguments():
    release(make_snippet("plain", text="Plain words."))
    release(make_snippet("tone-line", text="Be {{ tone }}.", arguments=[{"name": "tone"}]))
    resource = make_resource(text="Intro {{> plain }}")
    assert errors(resource) == []
    Resource.objects.filter(pk=resource.pk).update(text="Intro\n{{> tone-line }}")
    (problem,) = errors(resource)
    assert problem.where == "content" and "only snippets without arguments" in problem


def test_a_templates_snippets_may_use_only_its_uri_variables():
    release(make_snippet("ticket-line", text="Ticket {{ id }}.", arguments=[{"name": "id"}]))
    release(make_snippet("tone-line", text="Be {{ tone }}.", arguments=[{"name": "tone"}]))
    assert errors(make_template(uri_template="tickets://{id}", body="{{> ticket-line }}")) == []
    (problem,) = errors(make_template(uri_template="orders://{id}", body="{{> tone-line }}"))
    assert problem.where == "body" and "not a variable of the URI template" in problem


def test_publishing_a_prompt_with_a_broken_reference_is_refused(publisher):
    prompt = prompt_with("{{ topic }} {{> nowhere }}")
    with pytest.raises(InvalidEntry, match="does not exist"):
        services.publish(prompt, acting_user=publisher, note="try", labels=["staging"])


@pytest.mark.parametrize(("language", "words"), [("de", "gibt es nicht"), ("zh-hans", "不存在")])
def test_reference_problems_are_worded_in_the_readers_language(language, words):
    from django.utils import translation

    with translation.override(language):
        (problem,) = errors(prompt_with("{{ topic }} {{> nowhere }}"))
    assert words in problem


def test_every_new_snippet_message_is_translated():
    """Each message of the reference checks, the archive refusal and the rollout refusal has a German
    and a Chinese translation (a msgid that drifted from the code would read back in English)."""
    import ast
    from pathlib import Path

    from django.utils import translation

    root = Path(__file__).resolve().parents[2]
    found: list[str] = []
    for name in ("registry/authoring/reference_checks.py", "registry/authoring/validation.py",
                 "registry/release/services.py", "registry/release/rollouts.py"):
        for node in ast.walk(ast.parse((root / name).read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "_" and node.args
                    and isinstance(node.args[0], ast.Constant) and "snippet" in str(node.args[0].value).lower()):
                found.append(node.args[0].value)
    assert len(found) >= 11
    for language in ("de", "zh-hans"):
        with translation.override(language):
            assert [text for text in found if translation.gettext(text) == text] == [], language
