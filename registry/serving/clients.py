"""MCP client tokens: issue (shown once, stored hashed), revoke, and resolve to a Viewer.

Resolving a token is on every authenticated request, so results are cached in memory for a
few seconds: a revoked or expired token stops working within TOKEN_CACHE_S.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time
from datetime import timedelta
from types import SimpleNamespace

from django.utils import timezone

from registry.audit import actor_name, write_audit
from registry.changes import service_transaction
from registry.models import AuditAction, McpClient
from registry.models.clients import SERVED_FIELDS
from registry.serving.viewer import Viewer

TOKEN_PREFIX = "mcpr_"
TOKEN_CACHE_S = 5.0
TOKEN_CACHE_SIZE = 10_000  # unknown tokens are remembered too; a flood of them must not grow memory
_cache: dict[str, tuple[float, Viewer | None]] = {}
_lock = threading.Lock()


def viewer_of(client: McpClient) -> Viewer:
    """The Viewer a client record stands for: its label, scope tags and identity (rollout buckets).
    Tokens, OAuth connections, stdio and the admin's pages all read a client through this."""
    return Viewer(label=client.label, scope_tags=client.scope, client_id=client.pk, client_name=client.name)


def hash_token(raw: str) -> str:
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


@service_transaction
def issue_token(client: McpClient) -> str:
    """Give `client` a new token (replacing any old one) and return it; only its hash is kept."""
    raw = TOKEN_PREFIX + secrets.token_urlsafe(32)
    client.token_hash = hash_token(raw)
    client.token_prefix = raw[: len(TOKEN_PREFIX) + 6]
    client.save()
    forget_cached_tokens()
    return raw


def create_client(*, name: str, label: str = "production", scope_tags: str = "", **fields) -> tuple[McpClient, str]:
    client = McpClient(name=name, label=label, scope_tags=scope_tags, **fields)
    client.token_hash = secrets.token_hex(32)  # placeholder until issue_token replaces it
    raw = issue_token(client)
    return client, raw


def forget_cached_tokens() -> None:
    with _lock:
        _cache.clear()
        _serving.clear()


def cached_viewer(raw: str) -> tuple[bool, Viewer | None]:
    """(known, viewer) from the in-memory cache; known=False means ask `load_viewer`."""
    entry = _cache.get(hash_token(raw))
    if entry is None or entry[0] < time.monotonic():
        return False, None
    return True, entry[1]


def load_viewer(raw: str) -> Viewer | None:
    """Resolve a bearer token to the Viewer it stands for, or None if unknown, revoked or expired."""
    digest = hash_token(raw)
    client = McpClient.objects.filter(token_hash=digest).first()
    viewer = None
    if client is not None and client.usable:
        viewer = viewer_of(client)
        now = timezone.now()
        if client.last_seen_at is None or now - client.last_seen_at > timedelta(minutes=1):
            McpClient.objects.filter(pk=client.pk).update(last_seen_at=now)
    with _lock:
        if len(_cache) >= TOKEN_CACHE_SIZE:
            clock = time.monotonic()
            for key in [k for k, (expires, _) in _cache.items() if expires < clock]:
                del _cache[key]
            if len(_cache) >= TOKEN_CACHE_SIZE:
                _cache.clear()
        _cache[digest] = (time.monotonic() + TOKEN_CACHE_S, viewer)
    return viewer


_serving: dict[int, tuple[float, tuple[str, frozenset[str], str, float | None, str] | None]] = {}


def still_serves(client_id: int, *, label: str, scope: frozenset[str], token_hash: str | None = None,
                 name: str | None = None) -> bool:
    """Whether a stream opened for this client as (label, scope[, token][, name]) may go on: the
    client is active and unexpired, still bound to that label and scope, (for a pre-shared token)
    still holds that token and still has that name (its rollout buckets). Cached for
    TOKEN_CACHE_S with the expiry instant (an expiry counts at once); a saved client drops the
    cache (mcp_endpoint/notify/revocation.py)."""
    entry = _serving.get(client_id)
    now = time.monotonic()
    if entry is None or entry[0] <= now:
        client = McpClient.objects.filter(pk=client_id).first()
        state = None
        if client is not None and client.active:
            expires = client.expires_at.timestamp() if client.expires_at is not None else None
            state = (client.label, client.scope, client.token_hash, expires, client.name)
        entry = (now + TOKEN_CACHE_S, state)
        with _lock:
            if len(_serving) >= TOKEN_CACHE_SIZE:
                _serving.clear()
            _serving[client_id] = entry
    state = entry[1]
    return (state is not None and (state[3] is None or time.time() < state[3]) and state[0] == label
            and state[1] == frozenset(scope) and (token_hash is None or state[2] == token_hash)
            and (name is None or state[4] == name))


def client_by_name(name: str) -> Viewer | None:
    """The Viewer of a named client, for transports where the operator picks it (stdio)."""
    client = McpClient.objects.filter(name=name).first()
    if client is None or not client.usable:
        return None
    return viewer_of(client)


# What is audited of a client: what it is served as (never its token hash), and its description.
AUDITED_FIELDS = (*(name for name in SERVED_FIELDS if name != "token_hash"), "description")


def client_state(client: McpClient | None) -> dict[str, object]:
    """What decides what a client may receive, as audited (the token itself never is)."""
    if client is None:
        return {}
    return {name: (value.isoformat() if hasattr(value, "isoformat") else value)
            for name in AUDITED_FIELDS for value in (getattr(client, name),)}


def audit_client_change(client: McpClient, *, before: dict[str, object] | None, acting_user, note: str = "") -> None:
    """Audit who created, re-scoped, re-labelled, revoked or re-issued a client's token, and when.

    A client's label and tags decide which versions it is served, so these are changes to what
    clients receive like any other; the audit row is written in the caller's transaction.
    """
    after = client_state(client)
    changes = [{"field": name, "before": (before or {}).get(name), "after": after[name]}
               for name in AUDITED_FIELDS if before is None or before.get(name) != after[name]]
    if before is not None and not changes and not note:
        return
    subject = SimpleNamespace(kind="client", key=client.name, pk=client.pk)  # what write_audit reads of an entry
    write_audit(entry=subject, action=AuditAction.CLIENT_CHANGED, acting_user=acting_user,
                actor=actor_name(acting_user), note=note or ("Created the client" if before is None else ""),
                changes=changes)

