"""The e-mail outbox, for operators (superusers): what was sent to whom, what waits, what failed and why.

Read-only: messages are written by the events and sent by the worker (registry/mail/)."""

from __future__ import annotations

from django.contrib import admin

from registry.admin.access import ReadOnlyAdminMixin
from registry.models import MailMessage


@admin.register(MailMessage)
class MailMessageAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ["created_at", "kind", "recipient", "to", "status", "attempts", "next_attempt_at", "last_error"]
    list_filter = ["status", "kind"]
    search_fields = ["to", "recipient__username", "subject"]
    list_select_related = ["recipient"]
    fields = ["created_at", "audit", "review", "recipient", "kind", "status", "attempts", "next_attempt_at",
              "last_attempt_at", "last_error", "sent_at", "to", "language", "subject", "text"]
