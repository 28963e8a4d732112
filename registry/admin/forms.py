"""Admin forms and inline formsets: validation at save, worded for non-programmers.

The checks themselves live in `registry.authoring.validation` (the services re-run them at publish);
these forms only decide where each message lands: next to the field it is about when there
is one, otherwise at the top of the inline it concerns. Warnings never block a save; they
are collected on `registry_warnings` and shown by the admin through the messages framework.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Iterable

from django import forms
from django.core.exceptions import ValidationError
from django.forms.models import BaseInlineFormSet
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.errors import TemplateSyntaxError
from registry.models import (
    PRODUCTION,
    STAGING,
    ContentKind,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    TemplateVariable,
)
from registry.formats.argtypes import BOUNDS, spec_problems
from registry.models import ArgumentType
from registry.models.base import label_name_validator
from registry.formats.rendering import normalise_newlines, placeholder_lines
from registry.authoring.snapshots import snapshot_argument
from registry.authoring.validation import (
    max_upload_bytes,
    registry_resource_exists,
    validate_prompt,
    validate_resource,
    validate_template,
)


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
    "uri_template": gettext_lazy("Uri template"), "body": gettext_lazy("Body"),
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
            if not target.mime_type and getattr(upload, "content_type", ""):
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
    initial: dict[str, Any]
    instance: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[call-arg]
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


class DraftRevisionMixin:
    """Optimistic concurrency for people: the form remembers the draft revision it was opened at.

    The admin locks and re-reads the row before validating a POST (VersionedEntryAdmin.get_object),
    so `instance.revision` is the current one; a save based on an older revision is refused with
    who changed it and when, and the editor's own edits stay in the re-displayed form. The hidden
    field then carries the current revision, so saving again, having seen the warning, is a
    deliberate replacement rather than a silent one.
    """

    instance: Any
    data: Any

    def _init_revision(self) -> None:
        if self.instance.pk is not None:
            self.fields["draft_revision"].initial = self.instance.revision  # type: ignore[attr-defined]

    def check_revision(self) -> None:
        from registry.authoring.drafts import conflict_message

        expected = self.cleaned_data.get("draft_revision")  # type: ignore[attr-defined]
        if self.instance.pk is None or expected is None or expected == self.instance.revision:
            return
        self.add_error(None, ValidationError(  # type: ignore[attr-defined]
            conflict_message(self.instance, expected) + " " + _("Your edits are still in the form below: copy what "
            "you need and reload, or save again to replace their version with yours."), code="draft_conflict"))
        self.data = self.data.copy()
        self.data[self.add_prefix("draft_revision")] = str(self.instance.revision)  # type: ignore[attr-defined]


class EntryForm(NewlinesMixin, DraftRevisionMixin, forms.ModelForm):
    draft_revision = forms.IntegerField(label=gettext_lazy("Draft revision"), widget=forms.HiddenInput, required=False)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._init_revision()

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        self.check_revision()
        return cleaned


# --------------------------------------------------------------------------------------- prompts


class PromptForm(EntryForm):
    class Meta:
        model = Prompt
        fields = ["name", "title", "description", "tags"]
        labels = labels_for(fields)


# Bound fields of the argument form, by the snapshot key registry/formats/argtypes.py uses for them.
ARGUMENT_BOUND_FIELDS = {"choices": "choices", "minLength": "min_length", "maxLength": "max_length",
                         "pattern": "pattern", "minimum": "minimum", "maximum": "maximum"}


class PromptArgumentForm(NewlinesMixin, forms.ModelForm):
    """One argument row. Bounds that do not apply to the chosen type are cleared (the page
    hides them), so switching a row from enum to integer never leaves stale choices behind."""

    position = forms.IntegerField(label=gettext_lazy("Position"), required=False, min_value=0,
                                  widget=forms.NumberInput(attrs={"style": "width:4em"}))

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
        super()._post_clean()
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


def live_forms(formset: BaseInlineFormSet) -> list[forms.ModelForm]:
    """Forms that will exist after saving: valid, filled in and not marked for deletion."""
    live = []
    for form in formset.forms:
        if not hasattr(form, "cleaned_data") or not form.cleaned_data:
            continue
        if formset.can_delete and formset._should_delete_form(form):
            continue
        live.append(form)
    return live


def _number_positions(live: list[forms.ModelForm]) -> None:
    """Rows left without a position go after the others, in the order they appear."""
    taken = [f.cleaned_data.get("position") for f in live if f.cleaned_data.get("position") is not None]
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
    position = forms.IntegerField(label=gettext_lazy("Position"), required=False, min_value=0,
                                  widget=forms.NumberInput(attrs={"style": "width:4em"}))
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
        super()._post_clean()
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
            if getattr(problem, "where", "") != "message:1":
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
            if not getattr(form, "cleaned_data", None) or (self.can_delete and self._should_delete_form(form)):
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
                form.add_error(field, ValidationError(undeclared_message(name, line, declared),
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


# ------------------------------------------------------------------------------------- resources


class ResourceForm(UploadMixin, EntryForm):
    upload = forms.FileField(
        required=False, label=gettext_lazy("File"),
        help_text=gettext_lazy("Upload binary content (e.g. an image or a PDF) instead of text."),
    )
    clear_file = forms.BooleanField(required=False, label=gettext_lazy("Remove the uploaded file"))

    class Meta:
        model = Resource
        fields = ["uri", "name", "title", "description", "mime_type", "audience", "priority", "tags", "text"]
        labels = labels_for(fields)
        widgets = {"text": forms.Textarea(attrs={"rows": 12, "cols": 90})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.registry_warnings: list[str] = []

    def _post_clean(self) -> None:
        super()._post_clean()
        resource = self.instance
        self.take_upload(resource)
        if "uri" in self.errors:
            return
        for problem in validate_resource(resource).errors:
            if problem.code == "invalid_uri":
                field = "uri"
            elif problem.where == "content":
                field = "upload"
            elif problem.code == "no_name":
                field = "name"
            else:
                field = None
                if resource.data_sha256 and resource.text:
                    problem += " " + _("Tick “Remove the uploaded file” to use the text, or empty the text box.")
            if field is not None and field in self.errors:
                continue  # already explained by the field's own check
            self.add_error(field, ValidationError(problem, code="invalid_resource"))


# ------------------------------------------------------------------------------------- templates


class ResourceTemplateForm(EntryForm):
    class Meta:
        model = ResourceTemplate
        fields = ["uri_template", "name", "title", "description", "mime_type", "audience", "priority", "tags", "body"]
        labels = labels_for(fields)
        widgets = {"body": forms.Textarea(attrs={"rows": 10, "cols": 90})}

    def _post_clean(self) -> None:
        super()._post_clean()
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


# --------------------------------------------------------------------------- publishing & labels


class PublishForm(forms.Form):
    note = forms.CharField(
        label=gettext_lazy("Change note"),
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text=gettext_lazy("Required: say what changed and why. It is kept in the history for everyone."),
        error_messages={"required": gettext_lazy("A change note is required to publish: say what changed and why.")},
    )
    labels = forms.MultipleChoiceField(
        label=gettext_lazy("Point these labels at the new version"),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text=gettext_lazy("Clients are served the version their label points at. Most clients use "
                               "'production'."),
    )
    new_label = forms.CharField(
        label=gettext_lazy("Another label"), required=False, max_length=40, validators=[label_name_validator],
        help_text=gettext_lazy("Optional: a new label name, e.g. 'canary'."),
    )

    override = forms.BooleanField(
        label=gettext_lazy("Emergency override"), required=False,
        help_text=gettext_lazy("Move protected labels now, without a review. Recorded in the audit log with your "
                               "name and reason."),
    )
    override_reason = forms.CharField(
        label=gettext_lazy("Reason for the override"), required=False, widget=forms.TextInput(attrs={"size": 80}),
        help_text=gettext_lazy("Required with the override, e.g. 'incident 42: the current version gives wrong "
                               "answers'."),
    )

    def __init__(self, *args: Any, label_names: Iterable[str] = (), can_override: bool = False,
                 protected: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = list(dict.fromkeys([PRODUCTION, STAGING, *label_names]))
        protected = set(protected)
        self.fields["labels"].choices = [
            (n, _("%(label)s (protected: needs a review)") % {"label": n} if n in protected else n) for n in names]
        self.fields["labels"].initial = [PRODUCTION]
        if protected:
            self.fields["labels"].help_text = str(self.fields["labels"].help_text) + " " + _(
                "Protected labels are not moved at once: the new version is published, and a review request "
                "is filed that another publisher approves in the review queue."
            )
        if not can_override:
            del self.fields["override"]
            del self.fields["override_reason"]

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        reason = (data.get("override_reason") or "").strip()
        if data.get("override") and not reason:
            self.add_error("override_reason", ValidationError(_("Say why the review is skipped."), code="reason_required"))
        data["override_reason"] = reason if data.get("override") else None
        return data

    def chosen_labels(self) -> list[str]:
        labels = list(self.cleaned_data.get("labels") or [])
        if self.cleaned_data.get("new_label"):
            labels.append(self.cleaned_data["new_label"])
        return list(dict.fromkeys(labels))


class LabelMoveForm(forms.Form):
    label = forms.CharField(max_length=40, validators=[label_name_validator], widget=forms.HiddenInput)
    version = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    note = forms.CharField(
        label=gettext_lazy("Note"),
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text=gettext_lazy("Why the label moves. Required for a roll back."),
    )

    override_reason = forms.CharField(
        label=gettext_lazy("Emergency override: reason"), required=False, widget=forms.TextInput(attrs={"size": 80}),
        help_text=gettext_lazy("Only for emergencies: the label is protected, so without a reason a review is "
                               "requested instead. The override is recorded in the audit log with your name and "
                               "reason."),
    )

    def __init__(self, *args: Any, rollback: bool = False, can_override: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rollback = rollback
        if not can_override:
            del self.fields["override_reason"]

    def clean_note(self) -> str:
        note = (self.cleaned_data.get("note") or "").strip()
        if self.rollback and not note:
            raise ValidationError(_("Say why you roll back: a note is required."), code="note_required")
        return note


class ReviewRequestForm(forms.Form):
    """An editor asks for the draft (or a version) to be served on a label."""

    label = forms.CharField(
        label=gettext_lazy("Label"), max_length=40, initial=PRODUCTION, validators=[label_name_validator],
        help_text=gettext_lazy("The label clients are served from; most clients use 'production'."),
    )
    note = forms.CharField(
        label=gettext_lazy("Note for the reviewer"), widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text=gettext_lazy("Required: what should be released and why. It becomes the change note of the new "
                               "version."),
        error_messages={"required": gettext_lazy("A note is required: say what should be released and why.")},
    )
    percent = forms.IntegerField(
        label=gettext_lazy("Only to a share of clients (%)"), required=False, min_value=1, max_value=99,
        help_text=gettext_lazy("Optional: 1-99 starts a percentage rollout instead of serving it to every client "
                               "at once."),
    )


class ReviewDecisionForm(forms.Form):
    comment = forms.CharField(
        label=gettext_lazy("Comment"), required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text=gettext_lazy("Optional when approving; required when rejecting (tell the requester why)."),
    )


class RolloutForm(forms.Form):
    """Label and candidate are chosen from what the entry has: nothing to mistype."""

    label = forms.ChoiceField(label=gettext_lazy("Label"), choices=[], initial=PRODUCTION,
                              error_messages={"invalid_choice": gettext_lazy("Choose one of the entry's labels.")})
    version = forms.TypedChoiceField(choices=[], coerce=int, label=gettext_lazy("Candidate version"),
                                     error_messages={"invalid_choice": gettext_lazy("Choose one of the published versions.")})
    percent = forms.IntegerField(
        label=gettext_lazy("Share of clients (%)"), min_value=0, max_value=100,
        help_text=gettext_lazy("0 stops the rollout (everyone gets the label's version again); 100 completes it "
                               "(the label moves to the candidate)."),
        error_messages={"min_value": gettext_lazy("Give a percentage from 0 to 100."),
                        "max_value": gettext_lazy("Give a percentage from 0 to 100.")},
    )
    note = forms.CharField(label=gettext_lazy("Note"), required=False,
                           widget=forms.Textarea(attrs={"rows": 2, "cols": 80}))
    override_reason = forms.CharField(
        label=gettext_lazy("Emergency override: reason"), required=False, widget=forms.TextInput(attrs={"size": 80}),
        help_text=gettext_lazy("Only for protected labels without an approved review; recorded in the audit log."),
    )
    # The rollout state of each label when the page was shown ({label: registry.release.rollouts.rollout_state}):
    # a change made meanwhile by someone else is refused instead of silently replaced.
    seen = forms.CharField(widget=forms.HiddenInput, required=False)

    def __init__(self, *args: Any, can_override: bool = False, labels: Iterable[str] = (),
                 versions: Iterable[tuple[int, str]] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["label"].choices = [(name, name) for name in labels]
        self.fields["version"].choices = [(number, text) for number, text in versions]
        if not can_override:
            del self.fields["override_reason"]

    def seen_state(self, label: str) -> str | None:
        """The state of `label`'s rollout the page showed, or None (a form posted without it)."""
        try:
            seen = json.loads(self.cleaned_data.get("seen") or "{}")
        except ValueError:
            return None
        value = seen.get(label) if isinstance(seen, dict) else None
        return value if isinstance(value, str) else None
