"""``settings.MCP_ENDPOINT`` read through one namespaced object (DRF's APISettings pattern),
reloaded when tests override the setting.

Keys (all optional):
    ALLOW_ANONYMOUS        serve requests without a bearer token (label "production", no scope)
    MAX_BODY_BYTES         larger POST bodies get HTTP 413 (default 1 MiB)
    PAGE_SIZE              items per list page (default 100)
    CACHE_TTL_MS           ``ttlMs`` on cacheable 2026-07-28 results (default 60000)
    SESSION_CACHE_SECONDS  how long a process trusts its cached copy of a legacy session before
                           re-validating it in the database (DELETE elsewhere shows up this late)
    SESSION_CACHE_SIZE     sessions kept in the per-process cache
    SESSION_IDLE_SECONDS   sessions unused this long are treated as expired (404)
    MAX_SESSIONS_PER_CLIENT live legacy sessions per client token, and per anonymous caller's network
                           (IPv4 address or IPv6 /64); initialize beyond it ends the least recently used
    MAX_ANONYMOUS_SESSIONS live legacy sessions of all anonymous callers together (same rule)
    MAX_CLIENT_INFO_BYTES  largest clientInfo, and largest capabilities, accepted by initialize (JSON bytes)
    MAX_BATCH_LENGTH       messages in one 2025-03-26 JSON-RPC batch (more: one -32600 error, nothing run)
    MAX_BATCH_RESPONSE_BYTES  responses of one batch together; past it, the rest get -32600 (not run)
    RESULT_CACHE_SIZE      serialised list pages / resource reads kept per process (entries)
    RESULT_CACHE_BYTES     byte budget of those results per process (default 16 MiB); only the
                           current catalog generation's results are kept
    KEEPALIVE_SECONDS      SSE keep-alive comment interval on long-lived streams
    STREAM_RETRY_MS        the SSE ``retry:`` a 2025-11-25 GET stream opens with: how long a client waits
                           before each reconnection (default 10000). The official SDKs (TypeScript 1.x/2.x,
                           Python 1.x/2.x, and mcp-remote) try twice, this far apart, then give up for
                           good: twice this must outlast a restart (daphne takes 4-13 s)
    CHANGE_POLL_SECONDS    how often each process catches up from the change log (default 0.5)
    CHANGE_GAP_SECONDS     how long a missing change-log id (a transaction still open, or rolled
                           back) is waited for before it is given up on (default 600)
    CONSISTENCY_CHECK_SECONDS  how often each process compares its catalogs with the database
                           and rebuilds any entry that disagrees (default 30)
    REPLAY_LIMIT           change-log rows a legacy GET stream replays from Last-Event-ID before
                           it over-approximates instead (default 10000)
    LISTENER_QUEUE_SIZE    notifications buffered per stream before a non-reading client is cut off
    MAX_STREAMS            open notification streams per process (more get HTTP 429); both stream limits
                           are lowered at start to fit the open-file limit if it cannot be raised
    MAX_STREAMS_PER_CLIENT open notification streams per client token (anonymous callers: per peer address)
    MAX_LISTEN_URIS        resourceSubscriptions accepted in one subscriptions/listen
    SERVER_NAME, SERVER_TITLE, SERVER_VERSION, SERVER_DESCRIPTION, WEBSITE_URL, INSTRUCTIONS
    PUBLIC_URL             the endpoint's public URL (env MCP_PUBLIC_URL), for server.json
    REGISTRY_NAME          reverse-DNS name in the MCP Registry (env MCP_REGISTRY_NAME; default from PUBLIC_URL)
"""

from __future__ import annotations

from typing import Any

from django.conf import settings as django_settings
from django.core.signals import setting_changed

DEFAULTS: dict[str, Any] = {
    "ALLOW_ANONYMOUS": False,
    "MAX_BODY_BYTES": 1024 * 1024,
    "PAGE_SIZE": 100,
    "CACHE_TTL_MS": 60_000,
    "SESSION_CACHE_SECONDS": 2.0,
    "SESSION_CACHE_SIZE": 10_000,
    "SESSION_IDLE_SECONDS": 24 * 3600,
    "MAX_SESSIONS_PER_CLIENT": 100,
    "MAX_ANONYMOUS_SESSIONS": 10_000,
    "MAX_CLIENT_INFO_BYTES": 8 * 1024,
    "MAX_BATCH_LENGTH": 100,
    "MAX_BATCH_RESPONSE_BYTES": 4 * 1024 * 1024,
    "RESULT_CACHE_SIZE": 4096,
    "RESULT_CACHE_BYTES": 16 * 1024 * 1024,
    "KEEPALIVE_SECONDS": 15.0,
    "STREAM_RETRY_MS": 10_000,
    "CHANGE_POLL_SECONDS": 0.5,
    "CHANGE_GAP_SECONDS": 600.0,
    "CONSISTENCY_CHECK_SECONDS": 30.0,
    "REPLAY_LIMIT": 10_000,
    "LISTENER_QUEUE_SIZE": 256,
    "MAX_STREAMS": 10_000,
    "MAX_STREAMS_PER_CLIENT": 2_000,
    "MAX_LISTEN_URIS": 1_000,
    "SERVER_NAME": "mcp-prompt-registry",
    "SERVER_TITLE": "MCP Prompt Registry",
    "SERVER_VERSION": "0.1.0",
    "SERVER_DESCRIPTION": "Versioned prompts and resources, edited in the Django admin.",
    "WEBSITE_URL": None,
    "INSTRUCTIONS": None,
    "PUBLIC_URL": "",
    "REGISTRY_NAME": "",
}


class McpSettings:
    def __init__(self) -> None:
        self._cached: dict[str, Any] = {}
        self._ceilings: dict[str, int] = {}  # facts of this process (transport/open_files.py), kept

    def clamp(self, name: str, ceiling: int | None) -> None:
        """Cap a numeric setting at ``ceiling`` in this process (None removes the cap)."""
        if ceiling is None:
            self._ceilings.pop(name, None)
        else:
            self._ceilings[name] = ceiling
        self._cached.pop(name, None)

    @property
    def user_settings(self) -> dict[str, Any]:
        return getattr(django_settings, "MCP_ENDPOINT", None) or {}

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid MCP_ENDPOINT setting: {name!r}")
        try:
            return self._cached[name]
        except KeyError:
            value = self.user_settings.get(name, DEFAULTS[name])
            if name in self._ceilings:
                value = min(int(value), self._ceilings[name])
            self._cached[name] = value
            return value

    def reload(self) -> None:
        self._cached.clear()


mcp_settings = McpSettings()
_reload_hooks: list[Any] = []


def on_reload(func: Any) -> Any:
    """Register a callable run whenever MCP_ENDPOINT / SECRET_KEY / ALLOWED_HOSTS change."""
    _reload_hooks.append(func)
    return func


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting in ("MCP_ENDPOINT", "SECRET_KEY", "ALLOWED_HOSTS"):
        mcp_settings.reload()
        for hook in _reload_hooks:
            hook()


setting_changed.connect(_reload, dispatch_uid="mcp_endpoint.settings.reload")
