"""A JSON number or true/false where the API takes text is refused with a 400 naming the field, as
prompts as code refuse it, never saved as its string ("text": 5 used to save "5"); and every text
field the API declares is that strict kind, so a new one cannot drift back."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest
from rest_framework import serializers

import api
from api.fields import StrictCharField
from registry.models import Prompt, Snippet

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("path, body, field", [
    ("/api/v1/snippets/", {"name": "five", "text": 5}, "text"),
    ("/api/v1/snippets/", {"name": "yes", "text": True}, "text"),
    ("/api/v1/prompts/", {"name": "p", "description": 7, "messages": [{"role": "user", "text": "Hi"}]},
     "description"),
    ("/api/v1/prompts/", {"name": "p", "tags": [3], "messages": [{"role": "user", "text": "Hi"}]}, "tags"),
])
def test_a_number_or_boolean_given_for_text_is_refused_naming_the_field(as_editor, path, body, field):
    response = as_editor.post(path, body, format="json")
    assert response.status_code == 400, response.content
    assert "Expected a string" in str(response.json()[field])
    assert not Snippet.objects.exists() and not Prompt.objects.exists()


def test_a_number_in_a_message_text_is_refused_at_that_message(as_editor):
    response = as_editor.post("/api/v1/prompts/", {"name": "p", "messages": [{"role": "user", "text": 5}]},
                              format="json")
    assert response.status_code == 400
    assert "Expected a string, got a number" in str(response.json()["messages"])


def test_the_audit_log_filters_by_snippet_as_by_every_other_kind(as_auditor):
    from registry.release import services
    from tests.factories import make_snippet

    services.publish(make_snippet("style"), acting_user=None, actor="test", note="first", labels=["production"])
    response = as_auditor.get("/api/v1/audit/?entry_kind=snippet")
    assert response.status_code == 200, response.content
    rows = response.json()["results"] if isinstance(response.json(), dict) else response.json()
    assert rows and {row["entry_kind"] for row in rows} == {"snippet"}


def _declared_text_fields():
    for info in pkgutil.iter_modules(api.__path__):
        module = importlib.import_module(f"api.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if issubclass(cls, serializers.Serializer) and cls.__module__ == module.__name__:
                for field_name, field in cls._declared_fields.items():
                    for f in (field, getattr(field, "child", None)):
                        if isinstance(f, serializers.CharField) and not f.read_only:
                            yield f"{module.__name__}.{name}.{field_name}", f


def test_every_text_field_the_api_takes_is_strict():
    loose = [where for where, field in _declared_text_fields() if not isinstance(field, StrictCharField)]
    assert list(_declared_text_fields()) and loose == []


@pytest.mark.parametrize("kind, given, stored",
                         [("integer", 5, "5"), ("number", 0.5, "0.5"), ("boolean", True, "true")])
def test_a_typed_argument_default_may_be_given_as_its_json_value_as_in_prompts_as_code(as_editor, kind, given, stored):
    response = as_editor.post("/api/v1/prompts/", {
        "name": "p", "arguments": [{"name": "n", "type": kind, "default": given, "required": False}],
        "messages": [{"role": "user", "text": "Value {{ n }}"}]}, format="json")
    assert response.status_code == 201, response.content
    assert Prompt.objects.get(name="p").arguments.get().default == stored


def test_a_number_default_of_a_text_argument_is_refused(as_editor):
    response = as_editor.post("/api/v1/prompts/", {
        "name": "p", "arguments": [{"name": "n", "default": 5}], "messages": [{"role": "user", "text": "{{ n }}"}]},
        format="json")
    assert response.status_code == 400 and "Expected a string" in str(response.json())
