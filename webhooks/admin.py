"""Webhooks (secret shown once) and their deliveries (read-only, with a retry action)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.db import transaction
from django.utils import timezone
from django.utils.html import format_html

from webhooks import delivery
from webhooks.forms import WebhookForm
from webhooks.models import DeliveryStatus, Webhook, WebhookDelivery, new_secret


def _show_secret(request, webhook: Webhook) -> None:
    messages.warning(
        request,
        format_html("Signing secret of “{}”: <code>{}</code> — copy it into the receiver now; "
                    "it is not shown again.", webhook.name, webhook.secret),
    )


@admin.register(Webhook)
class WebhookAdmin(admin.ModelAdmin):
    form = WebhookForm
    list_display = ["name", "url", "event_list", "active", "created_by", "created_at"]
    list_filter = ["active"]
    search_fields = ["name", "url"]
    readonly_fields = ["secret_hint", "created_by", "created_at", "updated_at"]
    actions = ["rotate_secret"]

    @admin.display(description="events")
    def event_list(self, obj: Webhook) -> str:
        return ", ".join(obj.events or [])

    @admin.display(description="signing secret")
    def secret_hint(self, obj: Webhook) -> str:
        if not obj.pk:
            return "Generated when you save; shown once."
        return f"{obj.secret[:10]}… (shown once at creation; use “Rotate secret” to issue a new one)"

    def save_model(self, request, obj: Webhook, form, change: bool) -> None:
        if not change:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        if not change:
            _show_secret(request, obj)

    @admin.action(description="Rotate secret (the new one is shown once)", permissions=["change"])
    def rotate_secret(self, request, queryset) -> None:
        for webhook in queryset:
            webhook.secret = new_secret()
            webhook.save(update_fields=["secret", "updated_at"])
            _show_secret(request, webhook)


@admin.register(WebhookDelivery)
class WebhookDeliveryAdmin(admin.ModelAdmin):
    list_display = ["created_at", "event", "webhook", "status", "attempts", "last_status_code",
                    "next_attempt_at", "short_error"]
    list_filter = ["status", "event", "webhook"]
    search_fields = ["delivery_id", "webhook__name", "last_error"]
    date_hierarchy = "created_at"
    fields = ["delivery_id", "webhook", "event", "status", "attempts", "created_at", "last_attempt_at",
              "next_attempt_at", "delivered_at", "last_status_code", "last_error", "payload"]
    readonly_fields = fields
    actions = ["retry_now"]

    @admin.display(description="last error")
    def short_error(self, obj: WebhookDelivery) -> str:
        return obj.last_error[:80]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_retry_permission(self, request) -> bool:
        return request.user.has_perm("webhooks.change_webhook")

    @admin.action(description="Retry now", permissions=["retry"])
    def retry_now(self, request, queryset) -> None:
        with transaction.atomic():
            count = queryset.exclude(status=DeliveryStatus.DELIVERED).update(
                status=DeliveryStatus.PENDING, next_attempt_at=timezone.now()
            )
            transaction.on_commit(delivery.wake)
        self.message_user(request, f"{count} deliver{'y' if count == 1 else 'ies'} queued to be sent now.")
