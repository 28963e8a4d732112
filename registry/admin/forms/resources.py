"""The edit forms of resources and resource templates, and the template's variable inline.

Each problem the registry's checks find is shown next to the field it is about (the URI, the
upload, the name, the body) unless that field's own check has explained it already.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.forms.entry import EntryForm, live_forms
from registry.admin.forms.fields import NewlinesMixin, UploadMixin, labels_for
from registry.authoring.validation import validate_resource, validate_template
from registry.models import Resource, ResourceTemplate, TemplateVariable

# ------------------------------------------------------------------------------------- resources


class ResourceForm(UploadMixin, EntryForm):
    upload = forms.FileField(
        required=False, label=gettext_lazy("File"),
        help_text=gettext_lazy("Upload binary content (e.g. an image or a PDF) instead of text."),
    )
    clear_file = forms.BooleanField(required=False, label=gettext_lazy("Remove the uploaded file"))

    class Meta:
        model = Resource
        fields = ["uri", "name", "title", "description", "folder", "mime_type", "audience", "priority", "tags",
                  "text"]
        labels = labels_for(fields)
        widgets = {"text": forms.Textarea(attrs={"rows": 12, "cols": 90})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registry_warnings: list[str] = []

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # ModelForm's private hook, no stub
        resource = self.instance
        self.take_upload(resource)
        if "uri" in self.errors:
            return
        for problem in validate_resource(resource).errors:
            message: str = problem
            if problem.code == "invalid_uri":
                field = "uri"
            elif problem.where == "content":
                field = "upload"
            elif problem.code == "no_name":
                field = "name"
            else:
                field = None
                if resource.data_sha256 and resource.text:
                    message += " " + _("Tick “Remove the uploaded file” to use the text, or empty the text box.")
            if field is not None and field in self.errors:
                continue  # already explained by the field's own check
            self.add_error(field, ValidationError(message, code="invalid_resource"))


# ------------------------------------------------------------------------------------- templates


class ResourceTemplateForm(EntryForm):
    class Meta:
        model = ResourceTemplate
        fields = ["uri_template", "name", "title", "description", "folder", "mime_type", "audience", "priority",
                  "tags", "body"]
        labels = labels_for(fields)
        widgets = {"body": forms.Textarea(attrs={"rows": 10, "cols": 90})}

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]  # ModelForm's private hook, no stub
        if "uri_template" in self.errors:
            return
        for problem in validate_template(self.instance, variables=[]).errors:
            if problem.code == "invalid_uri":
                field = "uri_template"
            elif problem.code == "no_name":
                field = "name"
            else:
                field = "body"
            if field in self.errors:
                continue  # already explained by the field's own check
            self.add_error(field, ValidationError(problem, code="invalid_template"))


class TemplateVariableForm(NewlinesMixin, forms.ModelForm):
    class Meta:
        model = TemplateVariable
        fields = ["name", "description", "suggestions"]
        labels = labels_for(fields)
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2, "cols": 30}),
            "suggestions": forms.Textarea(attrs={"rows": 3, "cols": 30}),
        }


class TemplateVariableFormSet(BaseInlineFormSet):
    def clean(self) -> None:
        super().clean()
        if any(self.errors):
            return
        variables = [f.instance for f in live_forms(self)]
        report = validate_template(self.instance, variables=variables)
        errors = [e for e in report.errors if e.code == "unknown_variable"]
        if errors:
            raise ValidationError([ValidationError(e, code="unknown_variable") for e in errors])
