"""An MCP client's row changed what it is served as: its open streams are re-checked at once
(registry.signals.credentials_changed).

A stream keeps the credentials it was opened with; revoking the client, letting it expire, giving
it a new token, another label, scope or name (its rollout buckets are drawn by the name) must end
those streams (the client reconnects with what it is now), not leave them running until the next
keep-alive re-check. A save that changes none of `SERVED_FIELDS` (a description) announces
nothing. A deleted client is announced.

The stored row is read once per save, here (`client_saving`, which keeps it on the instance),
and every post_save receiver of a client asks `stored_client` for it: the token cache's
(registry/release/receivers.py) as well as this module's, one query instead of one each.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save, pre_save

from registry.models import McpClient
from registry.models.clients import SERVED_FIELDS
from registry.signals import credentials_changed

_STORED = "_registry_client_stored"


def client_saving(sender: Any, instance: McpClient, raw: bool = False, update_fields: Any = None,
                  **kwargs: Any) -> None:
    """The one read of a client's stored row before its save (its `SERVED_FIELDS`), kept on the
    instance for every post_save receiver; none for an insert, a fixture, or a save of other fields."""
    stored = None
    if (not raw and not instance._state.adding and instance.pk is not None
            and (update_fields is None or set(update_fields) & set(SERVED_FIELDS))):
        stored = McpClient._base_manager.filter(pk=instance.pk).values(*SERVED_FIELDS).first()
    instance.__dict__[_STORED] = stored  # set on every save, so no receiver reads an earlier save's row


def stored_client(instance: McpClient) -> dict[str, Any] | None:
    """What `instance`'s served fields were stored as before the save under way (None: nothing read)."""
    return instance.__dict__.get(_STORED)


def served_changed(instance: McpClient) -> bool:
    """Whether the save under way changes what the client is served as."""
    before = stored_client(instance)
    return before is not None and any(before[name] != getattr(instance, name) for name in SERVED_FIELDS)


def client_saved(sender: Any, instance: McpClient, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if created or raw or not served_changed(instance):
        return  # a new client has no streams yet; fixtures are not changes
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def client_deleted(sender: Any, instance: McpClient, **kwargs: Any) -> None:
    credentials_changed.send(sender=McpClient, client_ids=[instance.pk], token_checksums=[])


def connect() -> None:
    pre_save.connect(client_saving, sender=McpClient, dispatch_uid="registry.serving.credentials.client_saving")
    post_save.connect(client_saved, sender=McpClient, dispatch_uid="registry.serving.credentials.client_saved")
    post_delete.connect(client_deleted, sender=McpClient, dispatch_uid="registry.serving.credentials.client_deleted")
