"""audit_recorded / audits_recorded -> delivery rows in the same transaction (the outbox); sending waits for commit."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.models import AuditEntry
from webhooks.events import event_for, payload_for


class _ActiveHooks:
    """The active webhooks as read once in a transaction, kept for that transaction's later audit rows.

    One publish writes several audit rows (publish, label move, override...), each asking which
    webhooks subscribe. The list lives in the transaction's on_commit list as a callback that
    does nothing, so it is dropped with the transaction: at commit, on rollback, and with a
    rolled-back savepoint it was read in. A webhook saved or deleted inside the transaction
    marks it stale (`webhook_changed`)."""

    def __init__(self, hooks: list[Any]) -> None:
        self.hooks = hooks
        self.stale = False

    def __call__(self) -> None:
        """Nothing to do at commit: the cache simply ends with its transaction."""


def _cached(connection: Any) -> list[_ActiveHooks]:
    return [func for _sids, func, _robust in connection.run_on_commit if isinstance(func, _ActiveHooks)]


def active_hooks() -> list[Any]:
    """The active webhooks, read once per transaction (every time outside one)."""
    from webhooks.models import Webhook

    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        return list(Webhook.objects.filter(active=True))
    for found in _cached(connection):
        if not found.stale:
            return found.hooks
    found = _ActiveHooks(list(Webhook.objects.filter(active=True)))
    transaction.on_commit(found)
    return found.hooks


def webhook_changed(sender: Any, **kwargs: Any) -> None:
    """post_save/post_delete of a Webhook: the transaction's cached list no longer holds."""
    connection = transaction.get_connection()
    if connection.in_atomic_block:
        for found in _cached(connection):
            found.stale = True


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
