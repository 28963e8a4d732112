"""Typed prompt arguments through the REST API: written, read back, checked like the admin."""

from __future__ import annotations

import pytest

from registry.models import Prompt

pytestmark = pytest.mark.django_db

TYPED = {
    "name": "reply",
    "description": "Reply to a customer.",
    "arguments": [
        {"name": "tone", "description": "Tone of the reply", "type": "enum", "choices": ["formal", "warm"]},
        {"name": "count", "type": "integer", "minimum": 1, "maximum": 10, "required": False, "default": "3"},
        {"name": "code", "type": "string", "min_length": 3, "max_length": 8, "pattern": "[A-Z]+-[0-9]+"},
    ],
    "messages": [{"role": "user", "kind": "text", "text": "{{ tone }} {{ count }} {{ code }}"}],
}


def test_typed_arguments_are_written_and_read_back(as_editor):
    response = as_editor.post("/api/v1/prompts/", TYPED, format="json")
    assert response.status_code == 201, response.json()
    args = {a["name"]: a for a in response.json()["arguments"]}
    assert args["tone"]["type"] == "enum" and args["tone"]["choices"] == ["formal", "warm"]
    assert (args["count"]["minimum"], args["count"]["maximum"]) == (1, 10)
    assert (args["code"]["min_length"], args["code"]["max_length"], args["code"]["pattern"]) == (3, 8, "[A-Z]+-[0-9]+")
    count = Prompt.objects.get(name="reply").arguments.get(name="count")
    assert (count.type, count.minimum, count.maximum) == ("integer", 1, 10)


def test_untyped_arguments_read_back_as_text_without_bounds(as_editor):
    response = as_editor.post("/api/v1/prompts/", {**TYPED, "arguments": [{"name": "tone"}],
                                                  "messages": [{"kind": "text", "text": "{{ tone }}"}]}, format="json")
    assert response.status_code == 201, response.json()
    [arg] = response.json()["arguments"]
    assert arg["type"] == "text" and arg["choices"] == [] and arg["pattern"] == ""
    assert arg["minimum"] is None and arg["min_length"] is None


def test_bad_declarations_are_refused_with_every_reason_and_nothing_is_saved(as_editor):
    bad = {**TYPED, "arguments": [
        {"name": "tone", "type": "enum"},
        {"name": "count", "type": "integer", "minimum": 5, "maximum": 1, "required": False, "default": "x"},
        {"name": "code", "pattern": "(a)\\1"},
    ]}
    response = as_editor.post("/api/v1/prompts/", bad, format="json")
    assert response.status_code == 400
    problems = response.json()["arguments"]
    assert "Argument 'tone': an argument of type enum needs at least one choice." in problems
    assert "Argument 'count': the minimum 5 is larger than the maximum 1." in problems
    assert any(p.startswith("Argument 'code': the pattern") for p in problems)
    assert not Prompt.objects.filter(name="reply").exists()


def test_an_unknown_type_is_a_field_error(as_editor):
    response = as_editor.post("/api/v1/prompts/", {**TYPED, "arguments": [{"name": "tone", "type": "colour"}]},
                              format="json")
    assert response.status_code == 400
    assert response.json()["arguments"] == {"0": {"type": ['"colour" is not a valid choice.']}}


def test_multi_line_choices_and_too_long_bounds_are_field_errors(as_editor):
    response = as_editor.post("/api/v1/prompts/", {**TYPED, "arguments": [
        {"name": "tone", "type": "enum", "choices": ["formal\nwarm"]},
        {"name": "count", "type": "string", "max_length": 2**31},
        {"name": "code"}]}, format="json")
    assert response.status_code == 400
    errors = response.json()["arguments"]
    assert errors["0"] == {"choices": ["A choice must be a single line: 'formal\\nwarm'."]}
    assert list(errors["1"]) == ["max_length"] and "2" not in errors
    assert not Prompt.objects.filter(name="reply").exists()


def test_patch_changes_the_type_of_an_argument(as_editor):
    as_editor.post("/api/v1/prompts/", TYPED, format="json")
    arguments = [dict(a) for a in TYPED["arguments"]]
    arguments[0] = {"name": "tone", "type": "string", "max_length": 20}
    response = as_editor.patch("/api/v1/prompts/reply/", {"arguments": arguments}, format="json")
    assert response.status_code == 200, response.json()
    tone = Prompt.objects.get(name="reply").arguments.get(name="tone")
    assert (tone.type, tone.choices, tone.max_length) == ("string", "", 20)
