"""The admin form for a webhook: URL rules from the model, events as checkboxes."""

from __future__ import annotations

from django import forms

from webhooks.events import Event
from webhooks.models import Webhook


class WebhookForm(forms.ModelForm):
    url = forms.URLField(max_length=2000, assume_scheme="https",
                         help_text="https:// address that receives a POST per event. Not this server itself.")
    events = forms.MultipleChoiceField(
        choices=Event.choices, widget=forms.CheckboxSelectMultiple,
        error_messages={"required": "Choose at least one event to send."},
    )

    class Meta:
        model = Webhook
        fields = ["name", "url", "events", "active"]
