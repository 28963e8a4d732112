"""The forms of releasing: publish, move a label or roll back, request and decide a review, roll out.

Plain forms, not model forms: what they ask for is carried out by `registry.release`, which
re-checks permissions and protected labels; these forms only ask, in words, and say what is
missing (a change note, an override's reason, a percentage in range).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.models import PRODUCTION, STAGING
from registry.models.base import label_name_validator
from registry.release.labels import check_known_label


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
        self.label_names = names  # the labels offered, in their order
        protected = set(protected)
        cast(forms.ChoiceField, self.fields["labels"]).choices = [
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
        data = cast(dict[str, Any], super().clean())  # Form.clean returns cleaned_data
        reason = (data.get("override_reason") or "").strip()
        if data.get("override") and not reason:
            self.add_error("override_reason",
                           ValidationError(_("Say why the review is skipped."), code="reason_required"))
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


class DatalistInput(forms.TextInput):
    """A text box that offers `options` (an HTML datalist, no script): pick one, or type another."""

    def __init__(self, attrs: dict[str, Any] | None = None, options: Iterable[str] = ()) -> None:
        super().__init__(attrs)
        self.options = list(options)

    def render(self, name: str, value: Any, attrs: dict[str, Any] | None = None, renderer: Any = None) -> SafeString:
        list_id = f"{(attrs or {}).get('id') or name}-options"
        box = super().render(name, value, {**(attrs or {}), "list": list_id, "autocomplete": "off"}, renderer)
        options = format_html_join("", '<option value="{}"></option>', ((option,) for option in self.options))
        return format_html('{}<datalist id="{}">{}</datalist>', box, list_id, options)


class ReviewRequestForm(forms.Form):
    """An editor asks for the draft (or a version) to be served on a label: one of the labels in
    use, offered as they type, or a new one they confirm (a typo must not file a real request)."""

    label = forms.CharField(
        label=gettext_lazy("Label"), max_length=40, initial=PRODUCTION, validators=[label_name_validator],
        help_text=gettext_lazy("The label clients are served from; most clients use 'production'."),
    )
    new_label = forms.BooleanField(
        label=gettext_lazy("This is a new label"), required=False,
        help_text=gettext_lazy("Tick only to ask for a label that no entry or client uses yet."),
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


    def __init__(self, *args: Any, known_labels: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.known_labels = list(known_labels)
        self.fields["label"].widget = DatalistInput(options=self.known_labels)
        self.fields["label"].help_text = _("The label clients are served from; most clients use 'production'. "
                                           "In use: %(labels)s.") % {"labels": ", ".join(self.known_labels)}

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        label = cleaned.get("label")
        if label:
            try:
                check_known_label(label, confirmed=bool(cleaned.get("new_label")), known=self.known_labels)
            except ValidationError as exc:
                self.add_error("label", exc)
        return cleaned


class ReviewDecisionForm(forms.Form):
    comment = forms.CharField(
        label=gettext_lazy("Comment"), required=False, widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        help_text=gettext_lazy("Optional when approving; required when rejecting, asking for changes or adding "
                               "it to the discussion."),
    )
    go_live_at = forms.DateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local", "step": 1}, format="%Y-%m-%dT%H:%M:%S"),
        input_formats=["%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"],
        help_text=gettext_lazy("Optional: approve now and release at this time instead of at once."),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        from django.utils import timezone

        self.fields["go_live_at"].label = _("Go live at (%(zone)s)") % {"zone": timezone.get_current_timezone_name()}


class RolloutForm(forms.Form):
    """Label and candidate are chosen from what the entry has: nothing to mistype."""

    label = forms.ChoiceField(label=gettext_lazy("Label"), choices=[], initial=PRODUCTION,
                              error_messages={"invalid_choice": gettext_lazy("Choose one of the entry's labels.")})
    version = forms.TypedChoiceField(
        choices=[], coerce=int, label=gettext_lazy("Candidate version"),
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
        cast(forms.ChoiceField, self.fields["label"]).choices = [(name, name) for name in labels]
        cast(forms.ChoiceField, self.fields["version"]).choices = [(number, text) for number, text in versions]
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
