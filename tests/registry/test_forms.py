"""The admin forms on their own: where each validation message lands and how it is worded."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from registry.admin.forms.prompts import PromptMessageForm
from registry.admin.forms.releases import LabelMoveForm, PublishForm
from registry.admin.forms.resources import ResourceForm, ResourceTemplateForm
from registry.models import Prompt, PromptMessage
from tests.factories import PNG_1X1

pytestmark = pytest.mark.django_db


def message_form(data, files=None) -> PromptMessageForm:
    base = {"role": "user", "kind": "text", "text": "", "uri": "", "link_name": "", "mime_type": "", "position": ""}
    return PromptMessageForm({**base, **data}, files or {}, instance=PromptMessage(prompt=Prompt(name="p")))


def test_text_message_syntax_error_names_the_line_on_the_text_field():
    form = message_form({"text": "ok\nok\n{{ }}"})
    assert not form.is_valid()
    assert form.errors["text"] == ["Line 3: Empty placeholder '{{ }}': put an argument name inside."]


def test_unsupported_tag_is_explained():
    form = message_form({"text": "{% for x in y %}"})
    assert not form.is_valid()
    assert "only placeholders like {{ topic }} are allowed" in form.errors["text"][0]


def test_empty_text_message_is_rejected():
    form = message_form({"text": "  "})
    assert not form.is_valid()
    assert "text is empty" in form.errors["text"][0].lower()


def test_placeholders_alone_do_not_make_a_message_invalid():
    """Whether a placeholder is declared is the formset's question, not the single message's."""
    assert message_form({"text": "Hi {{ name }}"}).is_valid()


def test_image_message_without_a_file_asks_for_one():
    form = message_form({"kind": "image"})
    assert not form.is_valid()
    assert form.errors["upload"] == ["Upload the image file."]


def test_image_upload_fills_data_and_mime_type():
    form = message_form({"kind": "image"}, {"upload": SimpleUploadedFile("a.png", PNG_1X1, content_type="image/png")})
    assert form.is_valid(), form.errors
    assert bytes(form.instance.data) == PNG_1X1
    assert form.instance.mime_type == "image/png"


def test_wrong_file_type_for_audio_is_shown_on_the_type_field():
    form = message_form({"kind": "audio", "mime_type": "image/png"},
                        {"upload": SimpleUploadedFile("a.png", PNG_1X1, content_type="image/png")})
    assert not form.is_valid()
    assert "audio/" in form.errors["mime_type"][0]


def test_upload_over_the_configured_limit_is_rejected(settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_UPLOAD_BYTES": 20}
    form = message_form({"kind": "image"}, {"upload": SimpleUploadedFile("a.png", PNG_1X1, content_type="image/png")})
    assert not form.is_valid()
    assert form.errors["upload"] == [f"The file a.png is {len(PNG_1X1):,} bytes; the limit is 20 bytes. "
                                     "Upload a smaller file."]


def test_resource_link_needs_a_valid_uri():
    form = message_form({"kind": "resource_link", "uri": "relative/path"})
    assert not form.is_valid()
    assert "must start with a scheme" in form.errors["uri"][0]
    assert message_form({"kind": "resource_link", "uri": "docs://guide/{{ topic }}"}).is_valid()


def test_publish_form_requires_a_note_and_collects_labels():
    assert PublishForm({"note": ""}).errors["note"] == [
        "A change note is required to publish: say what changed and why."]
    form = PublishForm({"note": "why", "labels": ["production", "staging"], "new_label": "canary"})
    assert form.is_valid()
    assert form.chosen_labels() == ["production", "staging", "canary"]
    assert not PublishForm({"note": "why", "new_label": "Bad Label"}).is_valid()


def test_label_move_requires_a_note_only_for_a_roll_back():
    assert LabelMoveForm({"label": "production", "version": 1}, rollback=False).is_valid()
    form = LabelMoveForm({"label": "production", "version": 1}, rollback=True)
    assert form.errors["note"] == ["Say why you roll back: a note is required."]


def test_resource_form_rejects_text_and_file_together():
    form = ResourceForm({"uri": "docs://a", "name": "a", "text": "hello"},
                        {"upload": SimpleUploadedFile("a.png", PNG_1X1, content_type="image/png")})
    assert not form.is_valid()
    assert form.non_field_errors()[0].startswith("Give either text or an uploaded file, not both.")
    assert "Remove the uploaded file" in form.non_field_errors()[0]


def test_resource_form_rejects_a_traversing_uri():
    form = ResourceForm({"uri": "file:///srv/../etc/passwd", "name": "a", "text": "x"})
    assert not form.is_valid()
    assert "'..' path segments are not allowed" in form.errors["uri"][0]


def test_template_form_checks_the_body_against_the_uri_template():
    form = ResourceTemplateForm({"uri_template": "tickets://{id}", "name": "t", "body": "{{ id }} {{ other }}"})
    assert not form.is_valid()
    assert form.errors["body"] == ["The placeholder {{ other }} is not a variable of the URI template."]
    bad = ResourceTemplateForm({"uri_template": "tickets://{id", "name": "t", "body": ""})
    assert "braces" in bad.errors["uri_template"][0]


def test_a_missing_resource_name_is_reported_once():
    form = ResourceForm({"uri": "docs://a", "name": "", "text": "x"})
    assert not form.is_valid()
    assert form.errors["name"] == ["This field is required."]
