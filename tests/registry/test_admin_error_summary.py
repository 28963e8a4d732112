"""A failed save lists its errors at the top, each linked to its field; code in messages is <code>."""

from __future__ import annotations

import re

import pytest

from registry.admin.error_summary import code_spans
from registry.models import EditorPreference, Prompt
from tests.factories import make_prompt
from tests.registry.test_admin import client_for, prompt_post, url

pytestmark = pytest.mark.django_db


def _summary(html: str) -> str:
    found = re.search(r'<div class="registry-error-summary".*?</div>', html, re.S)
    assert found, "no error summary on the page"
    return found.group(0)


def test_a_failed_save_lists_each_error_at_the_top_with_a_link_to_its_field(client, editor):
    prompt = make_prompt("support", arguments=[{"name": "customer_name", "required": True}], messages=[
        {"role": "user", "kind": "text", "text": "Hello {{ customer_name }}"},
        {"role": "assistant", "kind": "text", "text": "Noted"},
    ])
    data = prompt_post(prompt)
    data["messages-1-text"] = "Dear {{ customer }}"
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    html = response.content.decode()
    summary = _summary(html)
    # Above the fields, and the link leads to the faulty message's text box (second message, 1-based).
    assert html.index("registry-error-summary") < html.index('id="id_messages-1-text"')
    assert '<a href="#id_messages-1-text">' in summary
    assert "Prompt message 2 · Text" in summary
    assert "Did you mean <code>customer_name</code>?" in summary
    assert "1 problem to fix before saving" in summary


def test_the_suggestion_shows_code_not_backticks_at_the_field(client, editor):
    prompt = make_prompt("support", arguments=[{"name": "customer_name", "required": True}])
    data = prompt_post(prompt)
    data["messages-0-text"] = "Dear {{ customer }}"
    html = client_for(client, editor).post(url("prompt_change", prompt.pk), data).content.decode()
    errorlist = html.split('class="errorlist', 1)[1].split("</ul>", 1)[0]
    assert "Did you mean <code>customer_name</code>?" in errorlist
    assert "`" not in errorlist


def test_an_entry_field_error_links_to_that_field(client, editor):
    prompt = make_prompt("support")
    data = prompt_post(prompt, name="")
    summary = _summary(client_for(client, editor).post(url("prompt_change", prompt.pk), data).content.decode())
    assert '<a href="#id_name">' in summary


def test_code_spans_escape_markup_before_formatting_the_backticks():
    shown = code_spans("Did you mean `<script>alert(1)</script>`? <b>bold</b> & `x`")
    assert shown == ("Did you mean <code>&lt;script&gt;alert(1)&lt;/script&gt;</code>? "
                     "&lt;b&gt;bold&lt;/b&gt; &amp; <code>x</code>")
    assert code_spans("a lone ` backtick") == "a lone ` backtick"


@pytest.mark.parametrize("language, where, heading, hint", [
    ("de", "Prompt-Nachricht 1 · Text", "1 Problem vor dem Speichern beheben",
     "Meinten Sie <code>customer_name</code>?"),
    ("zh-hans", "提示词消息 1 · 文本", "保存前需修正 1 个问题", "您是想写 <code>customer_name</code> 吗？"),
])
def test_the_summary_speaks_the_editors_language(client, editor, language, where, heading, hint):
    EditorPreference.objects.create(user=editor, language=language)
    prompt = make_prompt("support", arguments=[{"name": "customer_name", "required": True}])
    data = prompt_post(prompt)
    data["messages-0-text"] = "Dear {{ customer }}"
    summary = _summary(client_for(client, editor).post(url("prompt_change", prompt.pk), data).content.decode())
    assert where in summary and heading in summary and hint in summary


def test_an_error_of_a_whole_inline_links_to_that_inline(client, editor):
    prompt = make_prompt("support", arguments=[{"name": "a", "required": True}],
                         messages=[{"role": "user", "kind": "text", "text": "About {{ a }}"}])
    data = prompt_post(prompt, arguments=[{"id": prompt.arguments.get().pk, "name": "a", "position": 0},
                                          {"name": "a", "position": 1}])
    html = client_for(client, editor).post(url("prompt_change", prompt.pk), data).content.decode()
    summary = _summary(html)
    assert '<a href="#arguments-group"><strong>Prompt arguments</strong>: The argument name' in summary
    assert 'id="arguments-group"' in html


def test_an_error_of_the_whole_entry_is_shown_in_the_summary_itself(client, editor):
    prompt = make_prompt("support")
    data = prompt_post(prompt, description="Mine")
    data["draft_revision"] = prompt.revision
    Prompt.objects.filter(pk=prompt.pk).update(revision=prompt.revision + 1)  # someone saved meanwhile
    summary = _summary(client_for(client, editor).post(url("prompt_change", prompt.pk), data).content.decode())
    assert '<li><a href="#registry-error-summary">' in summary and "Your edits are still in the form" in summary
