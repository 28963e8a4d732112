"""An MCP client's row changed what it is served as: its open streams are re-checked at once
(registry.signals.credentials_changed).

A stream keeps the credentials it was opened with; revoking the client, letting it expire, giving
it a new token or another label or scope must end those streams (the client reconnects with
what it is now), not leave them running until the next keep-alive re-check. A save that changes
none of those fields (a description, a rename) announces nothing. A deleted client is announced.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save, pre_save

from registry.models import McpClient
from registry.signals import credentials_changed

SERVING_FIELDS = ("token_hash", "label", "scope_tags", "active", "expires_at")
_BEFORE = "_registry_credentials_before"


def client_saving(sender: Any, instance: McpClient, raw: bool = False, **kwargs: Any) -> None:
    if raw or instance.pk is None:
        return
    setattr(instance, _BEFORE, McpClient.objects.filter(pk=instance.pk).values(*SERVING_FIELDS).first())


def client_saved(sender: Any, instance: McpClient, created: bool, raw: bool = False, **kwargs: Any) -> None:
    before = instance.__dict__.pop(_BEFORE, None)
    if created or raw or before is None:
        return  # a new client has no streams yet; fixtures are not changes
    if all(before[name] == getattr(instance, name) for name in SERVING_FIELDS):
        return
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def client_deleted(sender: Any, instance: McpClient, **kwargs: Any) -> None:
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def connect() -> None:
    pre_save.connect(client_saving, sender=McpClient, dispatch_uid="registry.serving.credentials.client_saving")
    post_save.connect(client_saved, sender=McpClient, dispatch_uid="registry.serving.credentials.client_saved")
    post_delete.connect(client_deleted, sender=McpClient, dispatch_uid="registry.serving.credentials.client_deleted")
