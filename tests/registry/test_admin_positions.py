"""An inline row's Position counts from 1, as its heading ("1. User, Text") and the diffs do.

The form used to show the stored 0 for the first message under the heading "1. User, Text", so
an editor moving a message to "2" put it third. The model still stores 0 for the first row:
snapshots, imports and exports are unchanged.
"""

from __future__ import annotations

import re

import pytest

from registry.models import PromptMessage
from tests.factories import make_prompt
from tests.registry.test_admin import client_for, form_errors, url

pytestmark = pytest.mark.django_db

TWO_MESSAGES = [{"role": "user", "kind": "text", "text": "first {{ topic }}"},
                {"role": "assistant", "kind": "text", "text": "second"}]


def shown_position(page: str, prefix: str, index: int) -> str:
    """The value in the Position box of row `index` of an inline, or its read-only text."""
    box = re.search(rf'<input[^>]*name="{prefix}-{index}-position"[^>]*>', page)
    assert box is not None, f"no position box for {prefix}-{index}"
    return re.search(r'value="([^"]*)"', box.group(0)).group(1)


def page_post(page: str) -> dict[str, str]:
    """What the browser sends for the change page as it is: every input's and textarea's value,
    the chosen option of every select (rows' positions as shown on the page)."""
    data: dict[str, str] = {}
    for tag in re.findall(r"<input[^>]*>", page):
        name, kind = re.search(r'name="([^"]+)"', tag), re.search(r'type="([^"]+)"', tag)
        if not name or (kind and kind.group(1) in ("submit", "file", "button")):
            continue
        if kind and kind.group(1) == "checkbox" and "checked" not in tag:
            continue
        value = re.search(r'value="([^"]*)"', tag)
        data[name.group(1)] = value.group(1) if value else ("on" if kind and kind.group(1) == "checkbox" else "")
    for name, body in re.findall(r'<textarea[^>]*name="([^"]+)"[^>]*>(.*?)</textarea>', page, re.S):
        data[name] = body.removeprefix("\n").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
    for name, body in re.findall(r'<select[^>]*name="([^"]+)"[^>]*>(.*?)</select>', page, re.S):
        chosen = re.search(r'<option value="([^"]*)"[^>]*selected', body)
        data[name] = chosen.group(1) if chosen else ""
    data.pop("csrfmiddlewaretoken", None)
    data["_save"] = "Save"
    return {k: v for k, v in data.items() if "__prefix__" not in k}


def test_the_first_message_and_argument_show_position_1_under_the_heading_1(client, editor):
    prompt = make_prompt(arguments=[{"name": "topic"}, {"name": "tone"}], messages=TWO_MESSAGES)
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "1. User, Text" in page and "2. Assistant, Text" in page
    assert [shown_position(page, "messages", i) for i in (0, 1)] == ["1", "2"]
    assert [shown_position(page, "arguments", i) for i in (0, 1)] == ["1", "2"]
    assert 'min="1"' in re.search(r'<input[^>]*name="messages-0-position"[^>]*>', page).group(0)


def test_saving_the_page_as_shown_keeps_the_stored_order(client, editor):
    prompt = make_prompt(arguments=[{"name": "topic"}, {"name": "tone"}], messages=TWO_MESSAGES)
    editor_client = client_for(client, editor)
    data = page_post(editor_client.get(url("prompt_change", prompt.pk)).content.decode())
    response = editor_client.post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302, form_errors(response)
    assert [(m.position, m.text) for m in prompt.messages.all()] == [(0, "first {{ topic }}"), (1, "second")]
    assert [(a.position, a.name) for a in prompt.arguments.all()] == [(0, "topic"), (1, "tone")]


def test_typing_2_for_the_first_message_makes_it_the_second(client, editor):
    prompt = make_prompt(messages=TWO_MESSAGES)
    editor_client = client_for(client, editor)
    data = page_post(editor_client.get(url("prompt_change", prompt.pk)).content.decode())
    data["messages-0-position"], data["messages-1-position"] = "2", "1"
    response = editor_client.post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302, form_errors(response)
    assert [(m.position, m.text) for m in prompt.messages.all()] == [(0, "second"), (1, "first {{ topic }}")]


def test_position_0_is_refused_with_the_first_number(client, editor):
    prompt = make_prompt(messages=TWO_MESSAGES)
    editor_client = client_for(client, editor)
    data = page_post(editor_client.get(url("prompt_change", prompt.pk)).content.decode())
    data["messages-0-position"] = "0"
    response = editor_client.post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    assert "Positions start at 1 (the first row)." in form_errors(response)
    assert 'value="0"' in re.search(r'<input[^>]*name="messages-0-position"[^>]*>',
                                    response.content.decode()).group(0)  # shown back as typed
    assert list(PromptMessage.objects.filter(prompt=prompt).values_list("position", flat=True)) == [0, 1]


def test_a_reader_sees_the_1_based_position_too(client, auditor):
    prompt = make_prompt(messages=TWO_MESSAGES)
    page = client_for(client, auditor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "1. User, Text" in page
    shown = re.findall(r'field-shown_position">\s*<label>Position:</label>\s*<div class="readonly">([^<]*)</div>',
                       page)
    assert shown == ["1", "1", "2"], shown  # the argument, then the two messages
