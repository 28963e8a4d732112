import pytest

from registry.errors import InvalidArguments, MissingArguments, TemplateSyntaxError
from registry.formats.rendering import parse_template, placeholders_in, render_body, render_prompt


def prompt_snapshot(*messages, arguments=None):
    return {
        "name": "p",
        "description": "Desc",
        "arguments": arguments if arguments is not None else [{"name": "topic", "required": True}],
        "messages": list(messages),
    }


def text(t, role="user"):
    return {"role": role, "content": {"type": "text", "text": t}}


def test_placeholders_are_replaced_with_argument_values():
    result = render_prompt(prompt_snapshot(text("About {{ topic }} and {{topic}}.")), {"topic": "owls"})
    assert result == {"description": "Desc", "messages": [text("About owls and owls.")]}


def test_argument_value_that_looks_like_a_placeholder_stays_literal():
    snap = prompt_snapshot(
        text("A={{ a }} B={{ b }}"),
        arguments=[{"name": "a", "required": True}, {"name": "b", "required": True}],
    )
    result = render_prompt(snap, {"a": "{{ b }}", "b": "{% raw %}"})
    assert result["messages"][0]["content"]["text"] == "A={{ b }} B={% raw %}"


def test_unicode_and_empty_values_render_verbatim():
    result = render_prompt(prompt_snapshot(text("«{{ topic }}» ✓")), {"topic": "日本語 🦉"})
    assert result["messages"][0]["content"]["text"] == "«日本語 🦉» ✓"
    empty = render_prompt(prompt_snapshot(text("[{{ topic }}]")), {"topic": ""})
    assert empty["messages"][0]["content"]["text"] == "[]"


def test_missing_required_argument_raises_naming_it():
    with pytest.raises(MissingArguments) as error:
        render_prompt(prompt_snapshot(text("{{ topic }}")), {})
    assert error.value.names == ["topic"]


def test_optional_argument_uses_its_default():
    snap = prompt_snapshot(text("Tone: {{ tone }}"), arguments=[{"name": "tone", "required": False, "default": "warm"}])
    assert render_prompt(snap, {})["messages"][0]["content"]["text"] == "Tone: warm"
    assert render_prompt(snap, {"tone": "dry"})["messages"][0]["content"]["text"] == "Tone: dry"


def test_non_string_argument_is_rejected():
    with pytest.raises(InvalidArguments):
        render_prompt(prompt_snapshot(text("{{ topic }}")), {"topic": 3})


def test_embedded_resource_uri_may_use_placeholders():
    snap = prompt_snapshot(
        {"role": "user", "content": {"type": "resource", "resource": {"uri": "{{ uri }}", "mimeType": "text/plain",
                                                                      "text": "Body {{ uri }}"}}},
        arguments=[{"name": "uri", "required": True}],
    )
    block = render_prompt(snap, {"uri": "test://example-resource"})["messages"][0]["content"]
    assert block == {"type": "resource", "resource": {"uri": "test://example-resource", "mimeType": "text/plain",
                                                      "text": "Body {{ uri }}"}}


def test_placeholder_uri_that_renders_to_an_invalid_uri_is_an_argument_error():
    snap = prompt_snapshot(
        {"role": "user", "content": {"type": "resource_link", "uri": "{{ uri }}", "name": "x"}},
        arguments=[{"name": "uri", "required": True}],
    )
    with pytest.raises(InvalidArguments):
        render_prompt(snap, {"uri": "not a uri"})


def test_image_blocks_pass_through_unchanged():
    block = {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"}
    result = render_prompt(prompt_snapshot({"role": "user", "content": block}, arguments=[]), None)
    assert result["messages"][0]["content"] == block


@pytest.mark.parametrize(
    "source, line, fragment",
    [
        ("ok\nthen {{ topic", 2, "never closed"),
        ("{{ }}", 1, "Empty placeholder"),
        ("a\nb\n{{ two words }}", 3, "not a valid placeholder"),
        ("{% if x %}", 1, "not supported"),
        ("stray }}", 1, "never opened"),
    ],
)
def test_syntax_errors_name_the_line(source, line, fragment):
    with pytest.raises(TemplateSyntaxError) as error:
        parse_template(source)
    assert error.value.line == line
    assert fragment in error.value.message


def test_placeholders_in_lists_each_name_once_in_order():
    assert placeholders_in("{{ b }} {{ a }} {{ b }}") == ["b", "a"]


def test_single_braces_are_plain_text():
    assert render_body('{"id": "{{ id }}"}', {"id": "7"}) == '{"id": "7"}'
