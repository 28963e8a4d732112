"""An MCP client's row changed what it is served as: its open streams are re-checked at once
(registry.signals.credentials_changed).

A stream keeps the credentials it was opened with; revoking the client, letting it expire, giving
it a new token, another label, scope or name (its rollout buckets are drawn by the name) must end
those streams (the client reconnects with what it is now), not leave them running until the next
keep-alive re-check. A save that changes none of `SERVED_FIELDS` (a description) announces
nothing. A deleted client is announced.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save, pre_save

from registry.models import McpClient
from registry.models.clients import SERVED_FIELDS
from registry.signals import credentials_changed

_BEFORE = "_registry_credentials_before"


def client_saving(sender: Any, instance: McpClient, raw: bool = False, **kwargs: Any) -> None:
    if raw or instance.pk is None:
        return
    setattr(instance, _BEFORE, McpClient.objects.filter(pk=instance.pk).values(*SERVED_FIELDS).first())


def client_saved(sender: Any, instance: McpClient, created: bool, raw: bool = False, **kwargs: Any) -> None:
    before = instance.__dict__.pop(_BEFORE, None)
    if created or raw or before is None:
        return  # a new client has no streams yet; fixtures are not changes
    if all(before[name] == getattr(instance, name) for name in SERVED_FIELDS):
        return
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def client_deleted(sender: Any, instance: McpClient, **kwargs: Any) -> None:
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def connect() -> None:
    pre_save.connect(client_saving, sender=McpClient, dispatch_uid="registry.serving.credentials.client_saving")
    post_save.connect(client_saved, sender=McpClient, dispatch_uid="registry.serving.credentials.client_saved")
    post_delete.connect(client_deleted, sender=McpClient, dispatch_uid="registry.serving.credentials.client_deleted")
