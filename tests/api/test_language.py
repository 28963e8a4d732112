"""The REST API answers in the project's language whatever the caller's Accept-Language or saved admin language.

It is a contract for programs (CI, prompts-as-code): its error texts and field routing must not
change with the browser or the account that calls it (the admin alone is translated).
"""

from __future__ import annotations

import base64

import pytest

from registry.models import EditorPreference
from tests.api.test_entries import PROMPT
from tests.factories import PNG_1X1

pytestmark = pytest.mark.django_db

BAD_MESSAGES = {**PROMPT, "messages": [{"text": "Review {{ language }}"}, {"kind": "text", "text": "   "},
                                       {"kind": "image", "mime_type": "text/plain",
                                        "data": base64.b64encode(PNG_1X1).decode()}]}


@pytest.mark.parametrize("accept", ["de", "zh-Hans,zh;q=0.9"])
def test_api_draft_problems_stay_english_and_on_their_message_field_whatever_accept_language(as_editor, accept):
    response = as_editor.post("/api/v1/prompts/", BAD_MESSAGES, format="json", HTTP_ACCEPT_LANGUAGE=accept)
    assert response.status_code == 400
    messages = response.json()["messages"]
    assert messages["1"]["text"] == ["The text is empty."]
    assert "image/..." in messages["2"]["mime_type"][0]
    assert response["Content-Language"] == "en-us"


def test_api_drf_own_errors_stay_english_with_a_german_browser(as_editor):
    response = as_editor.post("/api/v1/prompts/", {"messages": [{"text": "x"}]}, format="json",
                              HTTP_ACCEPT_LANGUAGE="de")
    assert response.json()["name"] == ["This field is required."]


def test_api_service_refusals_stay_english_for_a_session_user_who_chose_german(client, editor):
    EditorPreference.objects.create(user=editor, language="de")
    client.force_login(editor)
    response = client.post("/api/v1/prompts/", BAD_MESSAGES, content_type="application/json",
                           HTTP_ACCEPT_LANGUAGE="de")
    assert response.status_code == 400
    assert response.json()["messages"]["1"]["text"] == ["The text is empty."]
    assert response["Content-Language"] == "en-us"


def test_openapi_schema_descriptions_stay_english_with_a_german_browser(as_editor):
    response = as_editor.get("/api/schema/?format=json", HTTP_ACCEPT_LANGUAGE="de")
    assert response.status_code == 200
    body = response.content.decode()
    assert "User name, or the tool that acted." in body and "Benutzername" not in body


@pytest.mark.parametrize("serializer, payload, field", [
    ("PromptSerializer", {**BAD_MESSAGES, "arguments": [{"name": "language"}, {"name": "language"}]}, "arguments"),
    ("ResourceSerializer", {"uri": "docs://a", "name": " ", "text": "x"}, "name"),
    ("TemplateSerializer", {"uri_template": "docs://{id}", "name": "t", "body": "{{ nope }}",
                            "variables": [{"name": "other"}]}, "variables"),
])
def test_draft_problems_are_routed_to_their_fields_by_code_not_by_their_english_words(
        rf, editor, serializer, payload, field):
    from django.utils import translation

    from api import drafts

    request = rf.post("/api/v1/")
    request.user = editor
    with translation.override("de"):
        checked = getattr(drafts, serializer)(data=payload, context={"request": request})
        assert not checked.is_valid()
    assert field in checked.errors, checked.errors
    if serializer == "PromptSerializer":
        assert checked.errors["messages"]["1"]["text"] == ["Der Text ist leer."]
        assert "mime_type" in checked.errors["messages"]["2"]
