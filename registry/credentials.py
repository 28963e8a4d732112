"""An MCP client's row changed: its open streams are re-checked at once (registry.signals).

A stream keeps the credentials it was opened with; revoking the client, letting it expire, giving
it a new token or another label or scope must end those streams (the client reconnects with
what it is now), not leave them running until the next keep-alive re-check. Any saved or deleted
client row is announced: a re-check of a client's streams costs one query, and a save that
changed nothing else re-checks and keeps them.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save

from registry.models import McpClient
from registry.signals import credentials_changed


def client_saved(sender: Any, instance: McpClient, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if created or raw:
        return  # a new client has no streams yet; fixtures are not changes
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def client_deleted(sender: Any, instance: McpClient, **kwargs: Any) -> None:
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def connect() -> None:
    post_save.connect(client_saved, sender=McpClient, dispatch_uid="registry.credentials.client_saved")
    post_delete.connect(client_deleted, sender=McpClient, dispatch_uid="registry.credentials.client_deleted")
