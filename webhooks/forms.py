"""The admin form for a webhook: URL rules from the model, events as checkboxes."""

from __future__ import annotations

from django import forms
from django.utils.translation import gettext_lazy as _

from webhooks.events import Event
from webhooks.models import Webhook


class WebhookForm(forms.ModelForm):
    url = forms.URLField(label=_("URL"), max_length=2000, assume_scheme="https",
                         help_text=_("https:// address that receives a POST per event. Not this server itself."))
    events = forms.MultipleChoiceField(
        label=_("Events"), choices=Event.choices, widget=forms.CheckboxSelectMultiple,
        error_messages={"required": _("Choose at least one event to send.")},
    )

    class Meta:
        model = Webhook
        fields = ["name", "url", "events", "active"]
