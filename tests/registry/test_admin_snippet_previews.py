"""The admin's previews show what production clients get: snippets expanded, never `{{> name }}`."""

from __future__ import annotations

import json

import pytest

from tests.factories import make_prompt, make_resource, make_snippet, make_template, make_user, release
from tests.registry.test_admin import client_for, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def editor():
    return make_user("Editors")


@pytest.fixture
def style():
    snippet = make_snippet("style", text="Be brief, {{ topic }} fans.", arguments=[{"name": "topic"}])
    release(snippet)
    return snippet


def test_a_prompt_preview_expands_its_snippets_and_fills_their_placeholders(client, editor, style):
    prompt = make_prompt(messages=[{"role": "user", "kind": "text", "text": "{{> style }} About {{ topic }}."}])
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk), {"preview": "1", "arg-topic": "tide"})
    text = json.loads(response.context["result_json"])["messages"][0]["content"]["text"]
    assert text == "Be brief, tide fans. About tide."


def test_a_resource_preview_expands_its_snippets(client, editor):
    release(make_snippet("signature", text="Regards."))
    resource = make_resource("docs://letter", text="Hello.\n{{> signature }}")
    response = client_for(client, editor).get(url("resource_preview", resource.pk))
    assert json.loads(response.context["result_json"])["contents"][0]["text"] == "Hello.\nRegards."


def test_a_template_preview_expands_its_snippets(client, editor):
    release(make_snippet("signature", text="Regards."))
    template = make_template("letters://{id}", body="Letter {{ id }}. {{> signature }}", suggestions={"id": ["7"]})
    response = client_for(client, editor).get(url("resourcetemplate_preview", template.pk))
    assert response.context["text"] == "Letter 7. Regards."


def test_a_preview_of_a_missing_snippet_says_so(client, editor):
    prompt = make_prompt(messages=[{"role": "user", "kind": "text", "text": "{{> ghost }} {{ topic }}"}])
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk), {"preview": "1", "arg-topic": "x"})
    assert "ghost" in response.context["error"]
