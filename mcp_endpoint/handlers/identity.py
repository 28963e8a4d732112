"""Who is asking: credentials (a bearer token, OAuth or pre-shared; stdio's ``--client``) -> Identity.

Both kinds of token are answered from memory on the hot path; long-lived streams re-check the
identity they were opened with (:func:`still_authorised`).
"""

from __future__ import annotations

import dataclasses
import hashlib
from typing import Any

from channels.db import database_sync_to_async

from ..settings import mcp_settings, on_reload
from ..wire import errors
from ..wire.context import Identity
from .reads import PRODUCTION, TOKEN_PREFIX, hash_token, source, still_serves


def identity_of(viewer: Any) -> Identity:
    """Registry Viewer -> transport identity.

    Results differ from what anonymous callers get (production, everything) for clients limited
    to tags and for clients bound to another label: both must be cached privately."""
    return Identity(viewer=viewer, client_id=viewer.client_id,
                    scoped=bool(viewer.scope_tags) or viewer.label != PRODUCTION, label=viewer.label)


_anonymous: list[Identity] = []
on_reload(_anonymous.clear)


def anonymous() -> Identity:
    """Anonymous viewers get the production label and no scope (one shared, immutable identity)."""
    if not _anonymous:
        _anonymous.append(identity_of(source.anonymous_viewer()))
    return _anonymous[0]


async def authenticate(authorization: str | None, resource: str | None = None) -> Identity:
    """``Authorization`` header -> Identity, or :class:`errors.Unauthorized` (HTTP 401).
    No header is accepted only while ALLOW_ANONYMOUS is on; a bad token is never anonymous.
    Pre-shared ``mcpr_`` tokens are the registry's; any other token is an OAuth access token,
    which must have been issued for ``resource`` (this endpoint's public URL, RFC 8707).
    Both kinds are cached in memory, so the hot path makes no query."""
    if not authorization:
        if mcp_settings.ALLOW_ANONYMOUS:
            return anonymous()
        raise errors.Unauthorized()
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise errors.Unauthorized("Unauthorized: use Authorization: Bearer <token>")
    if not token.startswith(TOKEN_PREFIX):
        viewer = await _oauth_viewer(token, resource or "")
        checksum = hashlib.sha256(token.encode()).hexdigest()
        return dataclasses.replace(identity_of(viewer), oauth_token=checksum)
    known, viewer = source.cached_viewer(token)
    if not known:
        viewer = await database_sync_to_async(source.load_viewer)(token)
    if viewer is None:
        raise errors.InvalidToken("Unauthorized: invalid, expired or revoked token")
    return dataclasses.replace(identity_of(viewer), token_hash=hash_token(token))


async def _oauth_viewer(token: str, resource: str) -> Any:
    from oauth import bearer  # the OAuth app is optional to the transport; imported on first use

    known, result = bearer.cached(token, resource)
    if not known:
        try:
            result = await database_sync_to_async(bearer.resolve)(token, resource)
        except bearer.OAuthRefusal as refusal:
            result = refusal
    if isinstance(result, bearer.OAuthRefusal):
        kind = errors.InsufficientScope if result.error == "insufficient_scope" else errors.InvalidToken
        status = "Forbidden" if kind is errors.InsufficientScope else "Unauthorized"
        raise kind(f"{status}: {result.description}")
    return result


async def still_authorised(identity: Identity) -> bool:
    """For long-lived streams: does the identity the stream was opened with still stand, as it
    was? Not if the client was revoked or expired, its token re-issued, its label, tags or name
    changed (the stream would go on judging for the old ones, or by the old name's rollout
    buckets), or, for OAuth, the token revoked, expired or deleted, its user deactivated or its
    connection deleted."""
    if identity.client_id is None:
        return True
    if identity.oauth_token:
        from oauth import bearer

        if not await database_sync_to_async(bearer.token_usable)(identity.oauth_token, identity.client_id):
            return False
    viewer = identity.viewer
    return await database_sync_to_async(still_serves)(
        identity.client_id, label=viewer.label, scope=viewer.scope_tags,
        token_hash=identity.token_hash or None, name=viewer.client_name)


def authenticate_stdio(client_name: str | None) -> Identity:
    """stdio takes its credentials from the environment: ``--client NAME`` picks a registry
    client by name (sync: call it before the event loop starts); none means anonymous."""
    if not client_name:
        return anonymous()
    viewer = source.viewer_by_name(client_name)
    if viewer is None:
        raise errors.Unauthorized(f"Unknown or disabled client {client_name!r}")
    return identity_of(viewer)
