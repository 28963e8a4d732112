"""Typed prompt arguments, pure part: value checks, descriptions, form schemas, declaration checks."""

from __future__ import annotations

import time

import pytest

from registry.formats import argtypes
from registry.formats.argtypes import (
    PATTERN_VALUE_MAX_LENGTH,
    check_value,
    compile_pattern,
    constraint_text,
    form_schema,
    from_form,
    listed_description,
    spec_problems,
)


def spec(**fields):
    return {"name": "x", **fields}


@pytest.mark.parametrize("kind, value, rendered", [
    ("integer", "42", "42"), ("integer", " +7 ", "7"), ("integer", "-3", "-3"),
    ("number", "2.5", "2.5"), ("number", "1e3", "1e3"), ("number", ".5", ".5"),
    ("boolean", "true", "true"), ("boolean", "FALSE", "false"),
    ("string", "one line", "one line"), ("text", "two\nlines", "two\nlines"),
])
def test_accepted_values_render_in_their_plain_form(kind, value, rendered):
    assert check_value(spec(type=kind), value) == (rendered, None)


@pytest.mark.parametrize("argument, value, reason", [
    (spec(type="integer"), "4.5", "must be a whole number"),
    (spec(type="integer"), "1_000", "must be a whole number"),
    (spec(type="integer"), "9" * 500, "must be a whole number"),
    (spec(type="number"), "nan", "must be a number"),
    (spec(type="number"), "1e999", "must be a number"),
    (spec(type="integer", minimum=1, maximum=10), "11", "must be a whole number from 1 to 10"),
    (spec(type="number", minimum=0.5), "0.1", "must be a number of at least 0.5"),
    (spec(type="number", maximum=2), "3", "must be a number of at most 2"),
    (spec(type="boolean"), "yes", "must be true or false"),
    (spec(type="enum", choices=["formal", "warm"]), "Formal", "must be one of: formal, warm"),
    (spec(type="string"), "a\nb", "must be a single line"),
    (spec(minLength=3), "ab", "must be at least 3 characters long (got 2)"),
    (spec(type="string", maxLength=2), "abc", "must be at most 2 characters long (got 3)"),
    (spec(pattern="[A-Z]{3}-[0-9]+"), "ABC-12x", "must match the pattern [A-Z]{3}-[0-9]+"),
    (spec(type="resource"), "not a uri", "must be the URI of a registry resource"),
])
def test_refused_values_say_why(argument, value, reason):
    _rendered, why = check_value(argument, value)
    assert why is not None and why.startswith(reason)


def test_pattern_must_match_the_whole_value():
    assert check_value(spec(pattern="[a-z]+"), "abc")[1] is None
    assert check_value(spec(pattern="[a-z]+"), "abc1")[1] is not None


def test_a_resource_argument_asks_the_caller_whether_the_uri_is_a_registry_resource():
    known = {"docs://style"}
    assert check_value(spec(type="resource"), "docs://style", known.__contains__)[1] is None
    reason = check_value(spec(type="resource"), "docs://other", known.__contains__)[1]
    assert "there is none with this URI" in reason


def test_a_catastrophic_pattern_runs_in_linear_time():
    started = time.perf_counter()
    assert check_value(spec(pattern="(a+)+$"), "a" * 50_000 + "!")[1] is not None
    assert time.perf_counter() - started < 1.0  # backtracking `re` would need ~2**50000 steps


def test_patterns_capture_nothing_so_a_whole_value_match_stays_on_re2s_fast_path():
    """Asked for capture groups, RE2 leaves its DFA: `(\\w+\\s?){1,50}$` on 1 MB took 4.6 s here
    (29 s in review), 8 ms without submatches."""
    compiled = compile_pattern(r"(\w+\s?){1,50}$")
    assert compiled.groups == 0 and compiled.options.never_capture
    assert check_value(spec(pattern=r"(\w+\s?){1,50}$", maxLength=2_000_000), "a" * 1_000_000)[1] is None
    assert check_value(spec(pattern=r"(?P<key>[a-z]+)=(\d+)"), "abc=12")[1] is None  # named groups still group
    assert check_value(spec(pattern=r"(ab)+"), "ababa")[1] is not None


def test_a_patterned_value_without_a_maximum_length_is_bounded_by_the_default():
    at_limit = "a" * PATTERN_VALUE_MAX_LENGTH
    assert check_value(spec(pattern="a+"), at_limit)[1] is None
    reason = check_value(spec(pattern="a+"), at_limit + "a")[1]
    assert reason.startswith(f"must be at most {PATTERN_VALUE_MAX_LENGTH} characters long")
    assert check_value(spec(pattern="a+", maxLength=50_000), at_limit * 2)[1] is None  # the editor's own bound
    assert check_value(spec(), at_limit * 10)[1] is None  # no pattern: no default bound


def test_patterns_that_need_backtracking_are_refused_with_the_reason():
    problems = spec_problems(spec(pattern=r"(a)\1"))
    assert len(problems) == 1 and "cannot be used" in problems[0] and "backreferences" in problems[0]
    assert "at most 500" in spec_problems(spec(pattern="a" * 501))[0]


@pytest.mark.parametrize("argument, text", [
    (spec(type="enum", choices=["formal", "warm"]), "one of: formal, warm"),
    (spec(type="integer", minimum=1, maximum=10), "a whole number from 1 to 10"),
    (spec(type="number", minimum=0.5), "a number of at least 0.5"),
    (spec(type="boolean"), "true or false"),
    (spec(type="resource"), "the URI of a registry resource"),
    (spec(type="string", minLength=1, maxLength=80), "a single line, 1 to 80 characters"),
    (spec(pattern="[a-z]+"), "matching the pattern [a-z]+"),
    (spec(), ""),
])
def test_constraint_text(argument, text):
    assert constraint_text(argument) == text


def test_listed_description_appends_the_constraint_and_leaves_untyped_arguments_alone():
    assert listed_description(spec(description="Tone of the reply", type="enum", choices=["formal", "warm"])) \
        == "Tone of the reply (one of: formal, warm)"
    assert listed_description(spec(type="integer", minimum=1, maximum=10)) == "A whole number from 1 to 10"
    assert listed_description(spec(description="Free text")) == "Free text"


def test_form_schema_uses_the_types_and_bounds():
    schema = form_schema([
        spec(name="tone", type="enum", choices=["formal", "warm"]),
        spec(name="count", title="How many", type="integer", minimum=1, maximum=10),
        spec(name="ratio", type="number", maximum=0.5),
        spec(name="short", type="boolean"),
        spec(name="doc", type="resource"),
        spec(name="topic", minLength=2, maxLength=40),
    ])
    props = schema["properties"]
    assert schema["type"] == "object" and schema["required"] == ["tone", "count", "ratio", "short", "doc", "topic"]
    assert props["tone"]["enum"] == ["formal", "warm"] and props["tone"]["type"] == "string"
    assert props["count"] == {"type": "integer", "minimum": 1, "maximum": 10, "title": "How many",
                              "description": "A whole number from 1 to 10"}
    assert props["ratio"]["type"] == "number" and props["ratio"]["maximum"] == 0.5
    assert props["short"]["type"] == "boolean"
    assert props["doc"] == {"type": "string", "format": "uri", "title": "doc",
                            "description": "The URI of a registry resource"}
    assert props["topic"]["minLength"] == 2 and props["topic"]["maxLength"] == 40


@pytest.mark.parametrize("value, text", [(True, "true"), (False, "false"), (7, "7"), (2.0, "2"), (0.25, "0.25"),
                                         ("x", "x"), (["a"], None), (float("inf"), None)])
def test_form_values_become_the_strings_mcp_sends(value, text):
    assert from_form(spec(), value) == text


@pytest.mark.parametrize("argument, problem", [
    (spec(type="enum"), "needs at least one choice"),
    (spec(type="enum", choices=["a", "a"]), "listed more than once"),
    (spec(type="integer", choices=["a"]), "choices applies only to 'one of a list' (enum) arguments"),
    (spec(type="enum", choices=["a"], minimum=1), "a minimum applies only to number arguments"),
    (spec(type="boolean", pattern="x"), "a pattern applies only to text arguments"),
    (spec(minLength=5, maxLength=2), "the minimum length 5 is larger than the maximum length 2"),
    (spec(type="number", minimum=5, maximum=2), "the minimum 5 is larger than the maximum 2"),
    (spec(type="integer", maximum=2.5), "must be a whole number, not 2.5"),
    (spec(type="integer", default="ten"), "the default 'ten' must be a whole number"),
    (spec(type="boolean", default="yes"), "the default 'yes' must be true or false"),
    (spec(type="enum", choices=["a", "b"], suggestions=["c"]), "the suggestion 'c' must be one of: a, b"),
    (spec(type="color"), "the type 'color' is unknown"),
])
def test_declaration_problems(argument, problem):
    problems = spec_problems(argument)
    assert any(problem in p for p in problems), problems


def test_a_sound_declaration_has_no_problems():
    assert spec_problems(spec(type="integer", minimum=1, maximum=10, default="5", suggestions=["3"])) == []
    assert spec_problems(spec(type="enum", choices=["formal", "warm"], default="warm")) == []
    assert spec_problems(spec()) == []


def test_untyped_specs_are_not_typed():
    assert not argtypes.is_typed(spec(description="d", required=True))
    assert argtypes.is_typed(spec(type="string")) and argtypes.is_typed(spec(maxLength=3))


def test_text_that_is_not_valid_unicode_is_refused_not_crashed_on():
    assert check_value(spec(pattern="[a-z]+"), "a\ud800")[1] == "must be valid text"
    assert spec_problems(spec(pattern="a\ud800")) == ["the pattern contains characters that are not valid text."]
