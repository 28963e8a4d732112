"""OAuth access token -> registry Viewer, for the MCP endpoint's bearer check.

A token is served only if it is live (not expired, not revoked), carries the ``mcp`` scope, is
bound to this resource (RFC 8707: its ``resource`` covers the MCP URL; tokens without an
audience are refused, as the MCP authorization spec requires) and belongs to a user. Each
(application, user) pair is served as one McpClient row, created on first use from the user's
group defaults, so revoking that row, its label, tags, rollouts and fetch counters all apply.
Results are cached for a few seconds like pre-shared tokens.
"""

from __future__ import annotations

import hashlib
import threading
import time

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from oauth2_provider.models import get_access_token_model

from registry.models import PRODUCTION, McpClient
from registry.serving import clients
from registry.serving.viewer import Viewer

from .models import GroupDefault, OAuthConnection
from .resource import SCOPE

CACHE_S = clients.TOKEN_CACHE_S
CACHE_SIZE = 10_000
_cache: dict[tuple[str, str], tuple[float, Viewer | OAuthRefusal]] = {}
_lock = threading.Lock()


class OAuthRefusal(Exception):
    """Why a token is not served; ``error`` is the RFC 6750 error code."""

    def __init__(self, error: str, description: str) -> None:
        super().__init__(description)
        self.error = error
        self.description = description


def forget_cached() -> None:
    with _lock:
        _cache.clear()
        _live.clear()


def cached(token: str, resource: str) -> tuple[bool, Viewer | OAuthRefusal | None]:
    key = (hashlib.sha256(token.encode("utf-8")).hexdigest(), resource)
    entry = _cache.get(key)
    if entry is None or entry[0] < time.monotonic():
        return False, None
    return True, entry[1]


def resolve(token: str, resource: str) -> Viewer:
    """The Viewer a token stands for at ``resource``, or :class:`OAuthRefusal`."""
    checksum = hashlib.sha256(token.encode("utf-8")).hexdigest()
    try:
        result: Viewer | OAuthRefusal = _resolve(checksum, resource)
    except OAuthRefusal as refusal:
        result = refusal
    with _lock:
        if len(_cache) >= CACHE_SIZE:
            _cache.clear()
        _cache[(checksum, resource)] = (time.monotonic() + CACHE_S, result)
    if isinstance(result, OAuthRefusal):
        raise result
    return result


def _resolve(checksum: str, resource: str) -> Viewer:
    access = (get_access_token_model().objects.select_related("application", "user")
              .filter(token_checksum=checksum).first())
    if access is None or access.is_expired():
        raise OAuthRefusal("invalid_token", "The access token is invalid, expired or revoked.")
    if not access.resource or not access.allows_audience(resource):
        raise OAuthRefusal("invalid_token", "The access token was not issued for this resource.")
    if access.user is None or not access.user.is_active or access.application is None:
        raise OAuthRefusal("invalid_token", "The access token does not belong to an active user.")
    if not access.allow_scopes([SCOPE]):
        raise OAuthRefusal("insufficient_scope", f"The access token lacks the {SCOPE!r} scope.")
    client = connection_client(access.application, access.user)
    if not client.usable:
        raise OAuthRefusal("invalid_token", "This connection was revoked in the registry.")
    now = timezone.now()
    if client.last_seen_at is None or (now - client.last_seen_at).total_seconds() > 60:
        McpClient.objects.filter(pk=client.pk).update(last_seen_at=now)
    return clients.viewer_of(client)


_live: dict[tuple[str, int | None], tuple[float, bool, float]] = {}


def token_usable(checksum: str, client_id: int | None) -> bool:
    """Whether the access token with this checksum still serves: it exists, has not expired,
    its user is active and (given `client_id`) its application and user are still the connection
    served as that client. The answer is cached for CACHE_S, its expiry instant with it, so an
    expiry counts at once; a change drops the cache (mcp_endpoint/notify/revocation.py)."""
    key = (checksum, client_id)
    entry = _live.get(key)
    now = time.monotonic()
    if entry is None or entry[0] <= now:
        access = (get_access_token_model().objects.select_related("user").filter(token_checksum=checksum)
                  .only("expires", "user__is_active", "application_id", "user_id").first())
        usable = access is not None and access.user is not None and access.user.is_active
        if usable and client_id is not None:
            usable = OAuthConnection.objects.filter(application_id=access.application_id, user_id=access.user_id,
                                                    client_id=client_id).exists()
        expires = time.time() + (access.expires - timezone.now()).total_seconds() if access is not None else 0.0
        entry = (now + CACHE_S, usable, expires)
        with _lock:
            if len(_live) >= CACHE_SIZE:
                _live.clear()
            _live[key] = entry
    return entry[1] and time.time() < entry[2]


def client_name(application, user) -> str:
    """``oauth:<application>:<user>``, within McpClient.name's 100 characters."""
    app = (application.name or application.client_id)[:40]
    return f"oauth:{app}:{user.get_username()}"[:90]


def connection_client(application, user) -> McpClient:
    """The McpClient an (application, user) pair is served as; created on first use."""
    link = OAuthConnection.objects.select_related("client").filter(application=application, user=user).first()
    if link is not None:
        return link.client
    label, tags = defaults_for(user)
    name = client_name(application, user)
    if McpClient.objects.filter(name=name).exists():  # another app with the same display name
        name = f"{name[:80]}#{application.pk}"
    try:
        with transaction.atomic():
            client, _raw = clients.create_client(
                name=name, label=label, scope_tags=tags,
                description=f"OAuth connection of {user.get_username()} through "
                            f"{application.name or application.client_id}.")
            OAuthConnection.objects.create(application=application, user=user, client=client)
            clients.audit_client_change(client, before=None, acting_user=user,
                                        note="Created by an OAuth grant")
    except IntegrityError:  # a concurrent first request created it
        return OAuthConnection.objects.select_related("client").get(application=application, user=user).client
    return client


def defaults_for(user) -> tuple[str, str]:
    """(label, scope_tags) from the user's highest-priority group default, else the settings'."""
    default = GroupDefault.objects.filter(group__user=user).order_by("-priority", "group__name").first()
    if default is None:
        return getattr(settings, "OAUTH_DEFAULT_LABEL", PRODUCTION), ""
    return default.label, default.scope_tags
