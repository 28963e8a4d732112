"""A prompt's edit form and its inlines: typed arguments and messages, checked against each other.

Argument rows clear the bounds their type does not have and show each declaration problem next
to its field; messages take text or files; the message formset marks every placeholder that
names no declared argument at its line, with a suggestion.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.error_summary import code_spans
from registry.admin.forms.entry import EntryForm, live_forms
from registry.admin.forms.fields import NewlinesMixin, OneBasedPositionField, UploadMixin, labels_for
from registry.authoring.snapshots import snapshot_argument
from registry.authoring.validation import registry_resource_exists, validate_prompt
from registry.errors import TemplateSyntaxError
from registry.formats.argtypes import BOUNDS, spec_problems
from registry.formats.rendering import placeholder_lines
from registry.models import ArgumentType, ContentKind, Prompt, PromptArgument, PromptMessage


class PromptForm(EntryForm):
    class Meta:
        model = Prompt
        fields = ["name", "title", "description", "folder", "tags"]
        labels = labels_for(fields)


# Bound fields of the argument form, by the snapshot key registry/formats/argtypes.py uses for them.
ARGUMENT_BOUND_FIELDS = {"choices": "choices", "minLength": "min_length", "maxLength": "max_length",
                         "pattern": "pattern", "minimum": "minimum", "maximum": "maximum"}


class PromptArgumentForm(NewlinesMixin, forms.ModelForm):
    """One argument row. Bounds that do not apply to the chosen type are cleared (the page
    hides them), so switching a row from enum to integer never leaves stale choices behind."""

    position = OneBasedPositionField(label=gettext_lazy("Position"))

    class Meta:
        model = PromptArgument
        fields = ["position", "name", "title", "description", "required", "default", "suggestions", "type",
                  "choices", "min_length", "max_length", "pattern", "minimum", "maximum"]
        labels = labels_for(fields)
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2, "cols": 30}),
            "default": forms.Textarea(attrs={"rows": 2, "cols": 20}),
            "suggestions": forms.Textarea(attrs={"rows": 2, "cols": 20}),
            "type": forms.Select(attrs={"class": "registry-argument-type"}),
            "choices": forms.Textarea(attrs={"rows": 2, "cols": 16, "data-bound-for": "enum"}),
            "min_length": forms.NumberInput(attrs={"style": "width:5em", "data-bound-for": "text string"}),
            "max_length": forms.NumberInput(attrs={"style": "width:5em", "data-bound-for": "text string"}),
            "pattern": forms.TextInput(attrs={"size": 16, "data-bound-for": "text string"}),
            "minimum": forms.NumberInput(attrs={"style": "width:6em", "step": "any",
                                                "data-bound-for": "integer number"}),
            "maximum": forms.NumberInput(attrs={"style": "width:6em", "step": "any",
                                                "data-bound-for": "integer number"}),
        }

    class Media:
        js = ["registry/argument_types.js"]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["type"].required = False  # rows posted without a type stay text, as before types existed

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        kind = cleaned.get("type") or ArgumentType.TEXT
        cleaned["type"] = kind
        self.instance.type = kind
        for key, name in ARGUMENT_BOUND_FIELDS.items():
            if key not in BOUNDS.get(kind, ()) and name in cleaned:
                cleaned[name] = "" if name in ("choices", "pattern") else None
        return cleaned

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # ModelForm's private hook, no stub
        if self.errors or not self.cleaned_data.get("name"):
            return
        for problem in spec_problems(snapshot_argument(self.instance), registry_resource_exists):
            field = _bound_field_of(problem)
            text = problem[:1].upper() + problem[1:]
            self.add_error(field, ValidationError(text, code="invalid_argument"))


def _bound_field_of(problem: str) -> str | None:
    """The argument field a declaration problem is shown next to (None: the row as a whole)."""
    for word, field in (("choice", "choices"), ("minimum length", "min_length"), ("maximum length", "max_length"),
                        ("pattern", "pattern"), ("minimum", "minimum"), ("maximum", "maximum"),
                        ("default", "default"), ("suggestion", "suggestions"), ("type", "type")):
        if word in problem:
            return field
    return None



def _number_positions(live: list[forms.ModelForm]) -> None:
    """Rows left without a position go after the others, in the order they appear."""
    taken = [p for p in (f.cleaned_data.get("position") for f in live) if p is not None]
    next_position = (max(taken) + 1) if taken else 0
    for form in live:
        if form.cleaned_data.get("position") is None:
            form.cleaned_data["position"] = next_position
            form.instance.position = next_position
            next_position += 1


class PromptArgumentFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        live = live_forms(self)
        names: dict[str, int] = {}
        for form in live:
            name = form.cleaned_data.get("name")
            if name:
                names[name] = names.get(name, 0) + 1
        duplicates = sorted(n for n, count in names.items() if count > 1)
        if duplicates:
            raise ValidationError(
                [
                    ValidationError(
                        _("The argument name '%(name)s' is used %(count)s times; each argument needs its own name."),
                        code="duplicate_argument",
                        params={"name": n, "count": names[n]},
                    )
                    for n in duplicates
                ]
            )
        _number_positions(live)
        super().clean()

    def live_arguments(self) -> list[PromptArgument]:
        return [form.instance for form in live_forms(self) if form.cleaned_data.get("name")]


class PromptMessageForm(NewlinesMixin, UploadMixin, forms.ModelForm):
    position = OneBasedPositionField(label=gettext_lazy("Position"))
    upload = forms.FileField(
        required=False,
        label=gettext_lazy("File"),
        help_text=gettext_lazy("Images, audio and binary embedded resources: upload the file here."),
    )
    clear_file = forms.BooleanField(required=False, label=gettext_lazy("Remove the uploaded file"))

    class Meta:
        model = PromptMessage
        fields = ["position", "role", "kind", "text", "uri", "resource", "link_name", "mime_type"]
        labels = labels_for(fields)
        widgets = {"text": forms.Textarea(attrs={"rows": 5, "cols": 80})}
        help_texts = {
            "role": gettext_lazy("MCP has only two roles, user and assistant: there is no “system” role. Put "
                                 "standing instructions (tone, rules, persona) at the start of the first user "
                                 "message."),
            "mime_type": gettext_lazy("File type, e.g. image/png or audio/mpeg; filled in from the upload when "
                                      "left empty."),
        }

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # ModelForm's private hook, no stub
        message = self.instance
        if self.take_upload(message):
            self.cleaned_data["mime_type"] = message.mime_type
        if message.kind == ContentKind.TEXT:
            message.data = None
        if self.errors:
            return
        # The per-message checks; cross-message ones (placeholders vs arguments) are the formset's.
        report = validate_prompt(Prompt(description="-"), arguments=[], messages=[message])
        for problem in report.errors:
            # A snippet's arguments are checked against the prompt's, as placeholders are: by the formset.
            if getattr(problem, "where", "") != "message:1" or problem.code == "snippet_argument":
                continue
            self.add_error(self._field_for(message.kind, problem.code),
                           ValidationError(problem.detail, code="invalid_message"))

    @staticmethod
    def _field_for(kind: str, code: str) -> str:
        """The field a per-message problem (by its registry.authoring.validation code) is shown next to."""
        if code == "file_type":
            return "mime_type"
        if code in ("file_missing", "file_too_large"):
            return "upload"
        if kind == ContentKind.TEXT:
            return "text"
        return "uri"


class PromptMessageFormSet(BaseInlineFormSet):
    """Checks the messages against the arguments of the sibling argument inline."""

    argument_formset: PromptArgumentFormSet | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registry_warnings: list[str] = []

    def declared_arguments(self) -> list[PromptArgument]:
        if self.argument_formset is not None:
            self.argument_formset.is_valid()
            return self.argument_formset.live_arguments()
        if self.instance.pk:
            return list(self.instance.arguments.all())
        return []

    def clean(self) -> None:
        super().clean()
        declared = self.declared_arguments()
        # Every message that parses is checked, even when another one has errors: one pass, all problems.
        misspelt = self._mark_undeclared_placeholders({arg.name for arg in declared})
        if any(self.errors):
            return
        live = live_forms(self)
        _number_positions(live)
        messages = [f.instance for f in sorted(live, key=lambda f: f.cleaned_data["position"])]
        report = validate_prompt(self.instance, arguments=declared, messages=messages)
        errors = [
            ValidationError(e, code="invalid_prompt")
            for e in report.errors
            # Per-message problems are shown on the message; duplicates on the argument inline.
            if not e.where.startswith("message:") and e.code != "duplicate_argument"
            and not (e.code == "undeclared_placeholder" and e.name in misspelt)
            and e.code != "argument"  # shown on the argument row itself
        ]
        if errors:
            raise ValidationError(errors)
        self.registry_warnings = report.warnings

    def _mark_undeclared_placeholders(self, declared: set[str]) -> set[str]:
        """Put each unknown placeholder's error at its message's field, with the line and a suggestion."""
        found: set[str] = set()
        for form in self.forms:
            if not getattr(form, "cleaned_data", None) or (
                    self.can_delete
                    and self._should_delete_form(form)):  # type: ignore[attr-defined]  # private, no stub
                continue
            kind = form.cleaned_data.get("kind")
            field = "text" if kind == ContentKind.TEXT else "uri"
            if field in form.errors or (field == "uri" and form.cleaned_data.get("resource")):
                continue
            try:
                uses = placeholder_lines(form.cleaned_data.get(field) or "")
            except TemplateSyntaxError:  # the message's own check explains it
                continue
            for name, line in uses:
                if name in declared:
                    continue
                found.add(name)
                form.add_error(field, ValidationError(code_spans(undeclared_message(name, line, declared)),
                                                      code="undeclared_placeholder"))
        return found


def undeclared_message(name: str, line: int, declared: Iterable[str]) -> str:
    """'Line 2: {{ custmer }} is not a declared argument; did you mean `customer_name`?'"""
    close = difflib.get_close_matches(name, sorted(declared), n=1, cutoff=0.6)
    if close:
        hint = _("Did you mean `%(name)s`?") % {"name": close[0]}
    elif declared:
        hint = _("Add it as an argument above, or fix the spelling.")
    else:
        hint = _("Add it as an argument above.")
    return _("Line %(line)s: {{ %(name)s }} is not a declared argument.") % {"line": line, "name": name} + " " + hint
