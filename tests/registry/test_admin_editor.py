"""The editor's view of the admin: previewing unsaved edits, state badges, message errors, releases."""

from __future__ import annotations

import json

import pytest

from registry.models import AuditEntry, Prompt
from tests.factories import make_prompt
from tests.registry.test_admin import client_for, prompt_post, row_counts, url

pytestmark = pytest.mark.django_db


def _preview_json(response) -> dict:
    return json.loads(response.context["result_json"])


# ------------------------------------------------------------------------------ unsaved preview


def test_preview_of_edits_renders_the_unsaved_form_and_saves_nothing(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt, description="Edited, not saved")
    data["messages-0-text"] = "Unsaved text about {{ topic }}."
    data.update({"preview": "1", "arg-topic": "tea"})
    before = row_counts()
    response = client.post(url("prompt_preview_edits", prompt.pk), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200
    result = _preview_json(response)
    assert result["messages"] == [{"role": "user", "content": {"type": "text", "text": "Unsaved text about tea."}}]
    assert result["description"] == "Edited, not saved"
    assert b"Unsaved text about tea." in response.content
    assert row_counts() == before
    prompt.refresh_from_db()
    assert prompt.description == "A prompt for tests"
    assert prompt.messages.get().text == "Tell me about {{ topic }}."


def test_preview_of_edits_uses_new_unsaved_arguments_and_messages(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt, arguments=[
        {"id": prompt.arguments.get().pk, "name": "topic", "required": True, "position": 0},
        {"name": "tone", "default": "calm", "position": 1},
    ], messages=[
        {"id": prompt.messages.get().pk, "role": "user", "kind": "text", "text": "About {{ topic }}.", "position": 0},
        {"role": "assistant", "kind": "text", "text": "In a {{ tone }} voice.", "position": 1},
    ])
    before = row_counts()
    response = client.post(url("prompt_preview_edits", prompt.pk), data)
    assert response.status_code == 200
    # Before any sample value is typed the defaults are used; a required one without default is asked for.
    assert "Fill in the required argument(s): topic." in response.context["hint"]
    data.update({"preview": "1", "arg-topic": "rain"})
    result = _preview_json(client.post(url("prompt_preview_edits", prompt.pk), data))
    assert [m["content"]["text"] for m in result["messages"]] == ["About rain.", "In a calm voice."]
    assert row_counts() == before


def test_preview_of_an_invalid_form_lists_the_problems_and_saves_nothing(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt)
    data["messages-0-text"] = "Hello {{ custmer }}"
    before = row_counts()
    response = client.post(url("prompt_preview_edits", prompt.pk), data, HTTP_X_REGISTRY_FRAGMENT="1")
    assert response.status_code == 200
    assert "custmer" in " ".join(response.context["errors"])
    assert "result_json" not in response.context
    assert row_counts() == before


def test_preview_of_edits_refuses_get(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    assert client.get(url("prompt_preview_edits", prompt.pk)).status_code == 405


def test_change_page_has_the_preview_panel_and_the_unsaved_edits_script(client, editor):
    prompt = make_prompt("greet")
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "data-registry-preview-button" in page
    assert url("prompt_preview_edits", prompt.pk) in page
    assert "registry/change_form.js" in page
    assert "<script>" not in page.split("registry/change_form.js")[1].split("</form>")[0]


def test_preview_without_javascript_opens_a_page_that_carries_the_edits(client, editor):
    prompt = make_prompt("greet")
    client_for(client, editor)
    data = prompt_post(prompt)
    data["messages-0-text"] = "Carried {{ topic }}"
    response = client.post(url("prompt_preview_edits", prompt.pk), data)
    page = response.content.decode()
    assert 'name="messages-0-text" value="Carried {{ topic }}"' in page
    assert AuditEntry.objects.count() == 0
    assert Prompt.objects.get().messages.get().text == "Tell me about {{ topic }}."
