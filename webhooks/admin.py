"""Webhooks (secret shown once, in the response page itself) and their deliveries (read-only,
with a retry action).

A new or rotated secret is rendered into the page that answers the POST and nowhere else: never
into a `messages` entry (the cookie storage would carry it to the browser and back), never on
the change page afterwards.
"""

from __future__ import annotations

import hashlib

from django.contrib import admin
from django.db import transaction
from django.template.response import TemplateResponse
from django.utils import timezone
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from webhooks import delivery
from webhooks.forms import WebhookForm
from webhooks.models import DeliveryStatus, Webhook, WebhookDelivery, new_secret


def secret_fingerprint(secret: str) -> str:
    """A short, non-reversible tag to tell secrets apart (which one a receiver holds) without showing one."""
    return "sha256:" + hashlib.sha256(secret.encode("utf-8")).hexdigest()[:12]


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    form = WebhookForm
    list_display = ["name", "url", "event_list", "active", "created_by", "created_at"]
    list_filter = ["active"]
    search_fields = ["name", "url"]
    readonly_fields = ["secret_hint", "created_by", "created_at", "updated_at"]
    actions = ["rotate_secret"]

    @admin.display(description=gettext_lazy("events"))
    def event_list(self, obj: Webhook) -> str:
        return ", ".join(obj.events or [])

    @admin.display(description=gettext_lazy("signing secret"))
    def secret_hint(self, obj: Webhook) -> str:
        if not obj.pk:
            return _("Generated when you save; shown once.")
        return _("fingerprint %(fingerprint)s (the secret was shown once; use “Rotate secret” to issue a new "
                 "one)") % {"fingerprint": secret_fingerprint(obj.secret)}

    def save_model(self, request, obj: Webhook, form, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        if not change:
            request._webhooks_new_secrets = [obj]

    def _secret_page(self, request, webhooks: list[Webhook]) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "title": _("Copy the signing secret now"),
            "opts": self.opts,
            "webhooks": webhooks,
        }
        response = TemplateResponse(request, "admin/webhooks/webhook/secret.html", context)
        response["Cache-Control"] = "no-store"
        return response

    def response_add(self, request, obj, post_url_continue=None):
        created = getattr(request, "_webhooks_new_secrets", None)
        if created:
            return self._secret_page(request, created)
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description=gettext_lazy("Rotate secret (the new one is shown once)"), permissions=["change"])
    def rotate_secret(self, request, queryset) -> TemplateResponse:
        rotated = []
        with transaction.atomic():
            for webhook in queryset.select_for_update():
                webhook.secret = new_secret()
                webhook.save(update_fields=["secret", "updated_at"])
                rotated.append(webhook)
        return self._secret_page(request, rotated)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "event", "webhook", "status", "attempts", "last_status_code",
                    "next_attempt_at", "short_error"]
    list_filter = ["status", "event", "webhook"]
    search_fields = ["delivery_id", "webhook__name", "last_error"]
    date_hierarchy = "created_at"
    fields = ("delivery_id", "webhook", "event", "status", "attempts", "created_at", "last_attempt_at",
              "next_attempt_at", "delivered_at", "last_status_code", "last_error", "payload")
    readonly_fields = fields
    actions = ["retry_now"]

    @admin.display(description=gettext_lazy("last error"))
    def short_error(self, obj: WebhookDelivery) -> str:
        return obj.last_error[:80]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("webhooks.change_webhook")

    @admin.action(description=gettext_lazy("Retry now"), permissions=["retry"])
    def retry_now(self, request, queryset) -> None:
        with transaction.atomic():
            count = queryset.exclude(status=DeliveryStatus.DELIVERED).update(
                status=DeliveryStatus.PENDING, next_attempt_at=timezone.now()
            )
            transaction.on_commit(delivery.wake)
        self.message_user(request, ngettext("%(count)s delivery queued to be sent now.",
                                            "%(count)s deliveries queued to be sent now.", count) % {"count": count})
