"""How the fields of every edit form behave: labels in the editor's language, uploads, line breaks.

Shared by the prompt, message, resource and template forms, so a label, the upload size limit
and what a browser does to line breaks are decided once.
"""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from django import forms
from django.core.exceptions import ValidationError
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.authoring.validation import max_upload_bytes
from registry.formats.rendering import normalise_newlines

# The labels of the model fields editors fill in, in their language. Same words as Django's
# automatic labels (the English is unchanged), set here so no migration is needed.
FIELD_LABELS = {
    "name": gettext_lazy("Name"), "title": gettext_lazy("Title"), "description": gettext_lazy("Description"),
    "tags": gettext_lazy("Tags"), "position": gettext_lazy("Position"), "required": gettext_lazy("Required"),
    "default": gettext_lazy("Default"), "suggestions": gettext_lazy("Suggestions"), "type": gettext_lazy("Type"),
    "choices": gettext_lazy("Choices"), "min_length": gettext_lazy("Min length"),
    "max_length": gettext_lazy("Max length"), "pattern": gettext_lazy("Pattern"), "minimum": gettext_lazy("Minimum"),
    "maximum": gettext_lazy("Maximum"), "role": gettext_lazy("Role"), "kind": gettext_lazy("Kind"),
    "text": gettext_lazy("Text"), "uri": gettext_lazy("Uri"), "resource": gettext_lazy("Resource"),
    "link_name": gettext_lazy("Link name"), "mime_type": gettext_lazy("Mime type"),
    "audience": gettext_lazy("Audience"), "priority": gettext_lazy("Priority"),
    "uri_template": gettext_lazy("Uri template"), "body": gettext_lazy("Body"), "folder": gettext_lazy("Folder"),
}


def labels_for(fields: list[str]) -> dict[str, Any]:
    return {name: FIELD_LABELS[name] for name in fields if name in FIELD_LABELS}


def _upload_error(upload: Any) -> ValidationError | None:
    limit = max_upload_bytes()
    if upload is not None and upload.size > limit:
        return ValidationError(
            _("The file %(name)s is %(size)s bytes; the limit is %(limit)s bytes. Upload a smaller file."),
            code="file_too_large",
            params={"name": upload.name, "size": f"{upload.size:,}", "limit": f"{limit:,}"},
        )
    return None


class UploadMixin:
    """Handles the `upload` and `clear_file` fields of a form whose model keeps bytes in `data` and a `mime_type`.

    Messages and resources take files the same way, so the size limit and what an upload does to
    the instance are decided once here; each form still declares the two fields (its own help text).
    """

    cleaned_data: dict[str, Any]
    errors: Any

    def clean_upload(self) -> Any:
        upload = self.cleaned_data.get("upload")
        error = _upload_error(upload)
        if error is not None:
            raise error
        return upload

    def take_upload(self, target: Any) -> bool:
        """Store an accepted upload's bytes on `target`, or drop them on "clear_file".

        Returns True when the file type was left empty and filled in from the upload.
        """
        upload = self.cleaned_data.get("upload")
        if upload is not None and "upload" not in self.errors:
            target.data = upload.read()
            if not target.mime_type and getattr(upload, "content_type", None):
                target.mime_type = upload.content_type
                return True
        elif self.cleaned_data.get("clear_file"):
            target.data = None
        return False


class NewlinesMixin:
    """Text is stored as typed, with LF line breaks: so saving a form nobody edited changes nothing.

    - What is stored: exactly the characters given, with every line break as LF. Every write path
      (admin, REST API, import, bulk import) turns CR LF and a lone CR into LF (`normalise_newlines`)
      and nothing else: no stripping of leading or trailing spaces or newlines, which are part of a
      message's or a document's text (Django's form fields strip by default; these do not).
    - A browser posts a text area's line breaks as CR LF: they become LF again here.
    - A browser drops line breaks from a single-line <input>: a value that has one (a title
      imported from a file, say) is shown in a small text area instead, so it survives the save.
    """

    cleaned_data: dict[str, Any]
    fields: dict[str, forms.Field]
    initial: MutableMapping[str, Any]
    instance: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if not isinstance(field, forms.CharField):
                continue
            field.strip = False
            current = self.initial.get(name, getattr(getattr(self, "instance", None), name, None))
            if (isinstance(field.widget, forms.TextInput) and isinstance(current, str)
                    and ("\n" in current or "\r" in current)):
                field.widget = forms.Textarea(attrs={**field.widget.attrs, "rows": current.count("\n") + 1})

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()  # type: ignore[misc]
        for name, value in list(self.cleaned_data.items()):
            if isinstance(value, str):
                self.cleaned_data[name] = normalise_newlines(value)
        return cleaned


class OneBasedPositionField(forms.IntegerField):
    """A row's place in its inline as the editor counts it: 1 for the first, as the row's heading
    says ("1. User, Text") and the diffs say ("Message 1"). The model keeps 0 for the first, as
    snapshots, imports and exports always have; only what the editor sees and types is shifted.
    Left empty, the row goes after the others (the formsets number it on save)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("widget", forms.NumberInput(attrs={"style": "width:4em", "min": 1}))
        super().__init__(required=False, **kwargs)

    def prepare_value(self, value: Any) -> Any:
        # The stored number (an int, from the instance) is shown 1-based; a posted string is
        # shown back as typed.
        return value + 1 if isinstance(value, int) else value

    def to_python(self, value: Any) -> int | None:
        number = super().to_python(value)
        if number is None:
            return None
        if number < 1:
            raise ValidationError(_("Positions start at 1 (the first row)."), code="min_value")
        return number - 1
