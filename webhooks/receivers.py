"""audit_recorded / audits_recorded -> delivery rows in the same transaction (the outbox); sending waits for commit."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.models import AuditEntry
from webhooks.events import event_for, payload_for


def audit_recorded(sender: Any, entry: AuditEntry, **kwargs: Any) -> None:
    from webhooks import delivery
    from webhooks.models import Webhook, WebhookDelivery

    event = event_for(entry.action)
    if event is None:
        return
    hooks = [hook for hook in Webhook.objects.filter(active=True) if hook.subscribes(event)]
    if not hooks:
        return
    payload = payload_for(event, entry)
    WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(webhook=hook, event=event, payload=payload) for hook in hooks]
    )
    # Nothing leaves the process inside the transaction; a rollback discards rows and this hook alike.
    transaction.on_commit(delivery.wake)


def audits_recorded(sender: Any, entries: list[AuditEntry], **kwargs: Any) -> None:
    """The same outbox rows for audit rows inserted in bulk (registry.bulk_import), reading the hooks once."""
    from webhooks import delivery
    from webhooks.models import Webhook, WebhookDelivery

    hooks = list(Webhook.objects.filter(active=True))
    rows = []
    for entry in entries:
        event = event_for(entry.action)
        if event is None:
            continue
        subscribed = [hook for hook in hooks if hook.subscribes(event)]
        if subscribed:
            payload = payload_for(event, entry)
            rows += [WebhookDelivery(webhook=hook, event=event, payload=payload) for hook in subscribed]
    if rows:
        WebhookDelivery.objects.bulk_create(rows, batch_size=500)
        transaction.on_commit(delivery.wake)
