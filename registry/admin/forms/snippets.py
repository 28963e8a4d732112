"""A snippet's edit form and its argument inline: the placeholders its text uses must be declared.

A snippet's arguments are filled from the including prompt's arguments of the same name, so an
undeclared placeholder is refused at the top of the argument inline (as the template's variables
are), and any other problem the registry's check finds is shown next to the text.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.forms.entry import EntryForm, live_forms
from registry.admin.forms.fields import NewlinesMixin, OneBasedPositionField, labels_for
from registry.authoring.validation import validate_snippet
from registry.models import ArgumentType, Snippet, SnippetArgument

# Problems of the argument rows as a whole (the other ones are about the text).
_ARGUMENT_CODES = {"undeclared_placeholder"}


class SnippetForm(EntryForm):
    class Meta:
        model = Snippet
        fields = ["name", "description", "folder", "tags", "text"]
        labels = labels_for(fields)
        widgets = {"description": forms.Textarea(attrs={"rows": 2, "cols": 90}),
                   "text": forms.Textarea(attrs={"rows": 10, "cols": 90})}

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # ModelForm's private hook, no stub
        if "text" in self.errors:
            return
        # The arguments are checked with their inline (SnippetArgumentFormSet), which sees the posted rows.
        for problem in validate_snippet(self.instance, arguments=[]).errors:
            if problem.code not in _ARGUMENT_CODES:
                self.add_error("text", ValidationError(problem, code="invalid_snippet"))


class SnippetArgumentForm(NewlinesMixin, forms.ModelForm):
    position = OneBasedPositionField(label=gettext_lazy("Position"))

    class Meta:
        model = SnippetArgument
        fields = ["position", "name", "description", "type"]
        labels = labels_for(fields)
        widgets = {"description": forms.Textarea(attrs={"rows": 2, "cols": 40})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["type"].required = False  # a row posted without a type is text

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        cleaned["type"] = cleaned.get("type") or ArgumentType.TEXT
        self.instance.type = cleaned["type"]
        return cleaned


class SnippetArgumentFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        live = live_forms(self)
        names: list[str] = [f.cleaned_data["name"] for f in live if f.cleaned_data.get("name")]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValidationError([ValidationError(
                _("The argument name '%(name)s' is used %(count)s times; each argument needs its own name."),
                code="duplicate_argument", params={"name": n, "count": names.count(n)}) for n in duplicates])
        taken = [p for p in (f.cleaned_data.get("position") for f in live) if p is not None]
        next_position = (max(taken) + 1) if taken else 0
        for form in live:  # rows left without a position go after the others
            if form.cleaned_data.get("position") is None:
                form.cleaned_data["position"] = form.instance.position = next_position
                next_position += 1
        report = validate_snippet(self.instance, arguments=[f.instance for f in live])
        errors = [e for e in report.errors if e.code in _ARGUMENT_CODES]
        if errors:
            raise ValidationError([ValidationError(e, code=e.code) for e in errors])
