"""Typed prompt arguments in the admin: the argument inline's type and bound fields, and the
preview's inputs (a select for an enum, a checkbox for a boolean, a number box for numbers)."""

from __future__ import annotations

import pytest
from django import forms

from registry.models import AuditEntry
from tests.factories import make_prompt, make_typed_prompt
from tests.registry.test_admin import client_for, prompt_post, url

pytestmark = pytest.mark.django_db


def test_preview_offers_inputs_that_fit_each_type(client, editor):
    prompt = make_typed_prompt()
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk))
    fields = response.context["form"].fields
    assert isinstance(fields["tone"], forms.ChoiceField)
    assert [value for value, _ in fields["tone"].choices] == ["", "formal", "warm"]
    assert isinstance(fields["short"], forms.BooleanField) and fields["short"].initial is False
    assert isinstance(fields["count"].widget, forms.NumberInput)
    assert fields["count"].widget.attrs == {"step": "1", "min": "1", "max": "10"}
    assert fields["ratio"].widget.attrs["step"] == "any"
    assert isinstance(fields["code"].widget, forms.TextInput) and fields["code"].widget.attrs["maxlength"] == 8
    assert fields["tone"].help_text == "Tone of the reply (one of: formal, warm)"
    html = response.text
    assert '<select name="arg-tone"' in html and 'type="checkbox" name="arg-short"' in html
    assert 'type="number" name="arg-count"' in html


def test_preview_renders_typed_values_as_prompts_get_would(client, editor):
    prompt = make_typed_prompt()
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk), {
        "preview": "1", "arg-tone": "warm", "arg-count": "4", "arg-short": "on", "arg-code": "AB-1"})
    assert "error" not in response.context, response.context.get("error")
    assert "warm x4 r0.5 strue cAB-1 d" in response.context["result_json"]


def test_preview_shows_each_refused_value_next_to_its_input(client, editor):
    prompt = make_typed_prompt()
    response = client_for(client, editor).get(url("prompt_preview", prompt.pk), {
        "preview": "1", "arg-tone": "warm", "arg-count": "40", "arg-code": "lower"})
    form = response.context["form"]
    assert form.errors["count"] == ["This value must be a whole number from 1 to 10."]
    assert form.errors["code"] == ["This value must match the pattern [A-Z]+-[0-9]+."]
    assert "Invalid argument(s)" in response.context["error"] and "result_json" not in response.context


def test_inline_saves_a_type_with_its_bounds(client, editor):
    prompt = make_prompt()
    data = prompt_post(prompt)
    data.update({"arguments-0-type": "integer", "arguments-0-minimum": "1", "arguments-0-maximum": "10"})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302
    topic = prompt.arguments.get()
    assert (topic.type, topic.minimum, topic.maximum) == ("integer", 1, 10)
    assert AuditEntry.objects.get(action="edit").changes[0]["field"].startswith("arguments[1].")


def test_inline_clears_bounds_the_chosen_type_does_not_use(client, editor):
    prompt = make_prompt(arguments=[{"name": "topic", "type": "enum", "choices": "a\nb"}])
    data = prompt_post(prompt)
    data.update({"arguments-0-type": "string", "arguments-0-choices": "a\nb", "arguments-0-max_length": "20"})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 302
    topic = prompt.arguments.get()
    assert (topic.type, topic.choices, topic.max_length) == ("string", "", 20)


def test_inline_shows_declaration_problems_next_to_the_field(client, editor):
    prompt = make_prompt()
    data = prompt_post(prompt)
    data.update({"arguments-0-type": "integer", "arguments-0-minimum": "5", "arguments-0-maximum": "2"})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    assert response.status_code == 200
    form = response.context["inline_admin_formsets"][0].formset.forms[0]
    assert form.errors["minimum"] == ["The minimum 5 is larger than the maximum 2."]
    data.update({"arguments-0-type": "enum", "arguments-0-minimum": "", "arguments-0-maximum": ""})
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), data)
    form = response.context["inline_admin_formsets"][0].formset.forms[0]
    assert form.errors["choices"] == ["An argument of type enum needs at least one choice."]
    assert prompt.arguments.get().type == "text"


def test_inline_marks_the_bound_fields_with_the_types_they_belong_to(client, editor):
    prompt = make_prompt()
    response = client_for(client, editor).get(url("prompt_change", prompt.pk))
    html = response.text
    assert 'class="registry-argument-type"' in html
    assert 'data-bound-for="enum"' in html and 'data-bound-for="integer number"' in html
    assert "registry/argument_types.js" in html
