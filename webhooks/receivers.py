"""audit_recorded / audits_recorded -> delivery rows in the same transaction (the outbox); sending waits for commit."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.changes import scope_memo
from registry.models import AuditEntry
from webhooks.events import event_for, payload_for

_ACTIVE = "webhooks.active_hooks"
_CHANGED = "webhooks.changed"


def active_hooks() -> list[Any]:
    """The active webhooks, read once per recording scope (a publish writes several audit rows, each
    asking which webhooks subscribe), and every time outside a scope or once a webhook was saved or
    deleted in it (`webhook_changed`): a list read before that write, or inside a savepoint rolled
    back since, may no longer hold."""
    from webhooks.models import Webhook

    memo = scope_memo()
    if memo is None or memo.get(_CHANGED):
        return list(Webhook.objects.filter(active=True))
    if _ACTIVE not in memo:
        memo[_ACTIVE] = list(Webhook.objects.filter(active=True))
    hooks: list[Any] = memo[_ACTIVE]
    return hooks


def webhook_changed(sender: Any, **kwargs: Any) -> None:
    """post_save/post_delete of a Webhook: the scope's list no longer holds, nor would a new one."""
    memo = scope_memo()
    if memo is not None:
        memo[_CHANGED] = True
        memo.pop(_ACTIVE, None)


def audit_recorded(sender: Any, entry: AuditEntry, **kwargs: Any) -> None:
    from webhooks import delivery
    from webhooks.models import WebhookDelivery

    event = event_for(entry.action)
    if event is None:
        return
    hooks = [hook for hook in active_hooks() if hook.subscribes(event)]
    if not hooks:
        return
    payload = payload_for(event, entry)
    WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(webhook=hook, event=event, payload=payload) for hook in hooks]
    )
    # Nothing leaves the process inside the transaction; a rollback discards rows and this hook alike.
    transaction.on_commit(delivery.wake)


def audits_recorded(sender: Any, entries: list[AuditEntry], **kwargs: Any) -> None:
    """The same outbox rows for audit rows inserted in bulk (registry.portable.bulk), reading the hooks once."""
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
