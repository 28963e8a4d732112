"""The words of a snapshot schema's fields in the active language (the admin's side of it).

registry/authoring/schema.py says which form field or text labels each field; this module reads
those labels from the admin's edit forms, so the diff speaks the words editors see, and the
choice sets' labels from the models. Cached per language.
"""

from __future__ import annotations

from functools import cache

from django.utils.translation import get_language, gettext

from registry.admin.forms.prompts import PromptArgumentForm, PromptForm, PromptMessageForm
from registry.admin.forms.resources import ResourceForm, ResourceTemplateForm, TemplateVariableForm
from registry.admin.forms.snippets import SnippetArgumentForm, SnippetForm
from registry.authoring.schema import Field
from registry.models import ArgumentType
from registry.models.prompts import ContentKind, MessageRole
from registry.models.resources import Audience

# The edit forms whose field labels a schema field names ("PromptForm.description"), by class name.
_EDIT_FORMS = {form.__name__: form for form in (PromptForm, PromptArgumentForm, PromptMessageForm,
                                                ResourceForm, ResourceTemplateForm, TemplateVariableForm,
                                                SnippetForm, SnippetArgumentForm)}


def label_text(field: Field) -> str:
    """The field's label in the active language."""
    return _label_in(field.form, field.label, get_language())


def binary_label(field: Field) -> str:
    """A document field's label when it holds bytes (an upload)."""
    return _label_in(field.binary_form or field.form, field.label, get_language())


@cache
def _label_in(form: str, label: str, language: str | None) -> str:
    if form:
        form_name, field_name = form.split(".")
        form_field = _EDIT_FORMS[form_name].base_fields.get(field_name)
        if form_field is not None and form_field.label:
            return str(form_field.label)
    return gettext(label) if label else ""


def choice_labels(name: str) -> dict[str, str]:
    """Coded values of choice set `name` -> their labels in the active language."""
    return _choice_labels_in(name, get_language())


@cache
def _choice_labels_in(name: str, language: str | None) -> dict[str, str]:
    choices = {"role": MessageRole, "content_type": ContentKind, "argument_type": ArgumentType,
               "audience": Audience}[name].choices
    return {value: str(label) for value, label in choices if value}
