"""Webhook endpoints and the outbox of their deliveries."""

from __future__ import annotations

import secrets
import uuid
from typing import TYPE_CHECKING

from django.conf import settings
from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from registry.models.outbox import OutboxRow
from webhooks.events import Event
from webhooks.validation import validate_webhook_url

if TYPE_CHECKING:
    from django_stubs_ext import StrOrPromise


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


class Webhook(models.Model):
    """An HTTP endpoint that receives signed JSON events."""

    name = models.CharField(
        _("name"), max_length=100, help_text=_("What receives the events, e.g. 'release-bot'."),
    )
    url = models.URLField(
        _("url"),
        max_length=2000,
        validators=[validate_webhook_url],
        help_text="https:// address that receives a POST per event. Not this server itself.",
    )
    secret = models.CharField(
        _("secret"), max_length=100, default=new_secret, editable=False,
        help_text="Signs every delivery (HMAC-SHA256); shown once when the webhook is created or the secret "
                  "is rotated.",
    )
    events = models.JSONField(_("events"), default=list, help_text="Event types this webhook receives.")
    active = models.BooleanField(
        _("active"), default=True, help_text=_("Untick to stop sending (pending deliveries wait)."),
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("created by"), null=True, blank=True,
        on_delete=models.SET_NULL, related_name="+", editable=False,
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)

    class Meta:
        verbose_name = _("webhook")
        verbose_name_plural = _("webhooks")
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def subscribes(self, event: str) -> bool:
        return event in (self.events or [])

    @property
    def event_labels(self) -> list[StrOrPromise]:
        return [Event(e).label if e in Event.values else e for e in self.events or []]


class DeliveryStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    DELIVERED = "delivered", _("Delivered")
    FAILED = "failed", _("Failed (gave up)")


class WebhookDelivery(OutboxRow):
    """One event for one webhook: written in the changing transaction, sent after commit."""

    webhook = models.ForeignKey(
        Webhook, verbose_name=_("webhook"), on_delete=models.CASCADE, related_name="deliveries",
    )
    delivery_id = models.UUIDField(
        _("delivery id"), default=uuid.uuid4, unique=True, editable=False,
        help_text=_("Sent as X-Registry-Delivery and in the signed body; the same on "
                                               "every retry, so receivers can deduplicate."),
    )
    event = models.CharField(_("event"), max_length=40, choices=Event.choices, db_index=True)
    payload = models.JSONField(_("payload"))
    status = models.CharField(
        _("status"), max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.PENDING,
    )
    # Indexed alone here (the e-mail outbox indexes it with its status).
    next_attempt_at = models.DateTimeField(_("next attempt at"), default=timezone.now, db_index=True)
    last_status_code = models.PositiveIntegerField(_("last status code"), null=True, blank=True)
    delivered_at = models.DateTimeField(_("delivered at"), null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name = _("webhook delivery")
        verbose_name_plural = _("webhook deliveries")
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="webhook_delivery_due")]

    def __str__(self) -> str:
        return f"{self.event} → {self.webhook} ({self.status})"
