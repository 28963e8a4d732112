"""OAuth changes that end a connection's open streams (registry.signals.credentials_changed).

An access token deleted (revoked at /oauth/revoke_token/, a refresh token revoked, deleted in
the admin, its application or user deleted) or saved with another expiry; a user deactivated;
an OAuth connection (the application and user pair a client row stands for) deleted. Each is
announced inside its transaction so the MCP endpoint re-checks the streams at once, in every
process, instead of at their next keep-alive tick or when the token expires.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db.models.signals import post_delete, post_save
from oauth2_provider.models import get_access_token_model

from registry.signals import credentials_changed

from .models import OAuthConnection


def token_changed(sender: Any, instance: Any, created: bool = False, raw: bool = False, **kwargs: Any) -> None:
    if created or raw or not instance.token_checksum:
        return
    credentials_changed.send(sender=sender, client_ids=[], token_checksums=[instance.token_checksum])


def user_saved(sender: Any, instance: Any, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if created or raw or instance.is_active:
        return  # only a deactivation ends streams (a login or profile edit keeps them)
    clients = list(OAuthConnection.objects.filter(user=instance).values_list("client_id", flat=True))
    if clients:
        credentials_changed.send(sender=sender, client_ids=clients, token_checksums=[])


def connection_deleted(sender: Any, instance: OAuthConnection, **kwargs: Any) -> None:
    credentials_changed.send(sender=OAuthConnection, client_ids=[instance.client_id], token_checksums=[])


def connect() -> None:
    token_model = get_access_token_model()
    post_save.connect(token_changed, sender=token_model, dispatch_uid="oauth.credentials.token_saved")
    post_delete.connect(token_changed, sender=token_model, dispatch_uid="oauth.credentials.token_deleted")
    post_save.connect(user_saved, sender=get_user_model(), dispatch_uid="oauth.credentials.user_saved")
    post_delete.connect(connection_deleted, sender=OAuthConnection, dispatch_uid="oauth.credentials.connection_deleted")
