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
    RESULT_CACHE_SIZE      serialised list pages / resource reads kept per process
    KEEPALIVE_SECONDS      SSE keep-alive comment interval on long-lived streams
    CHANGE_POLL_SECONDS    how often each process catches up from the change log (default 0.5)
    CHANGE_LOG_RETENTION_SECONDS  change-log rows older than this are pruned (default 7 days)
    LISTENER_QUEUE_SIZE    notifications buffered per stream before a non-reading client is cut off
    MAX_STREAMS            open notification streams per process (more get HTTP 429)
    MAX_STREAMS_PER_CLIENT open notification streams per client token (anonymous callers share one budget)
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
    "RESULT_CACHE_SIZE": 4096,
    "KEEPALIVE_SECONDS": 15.0,
    "CHANGE_POLL_SECONDS": 0.5,
    "CHANGE_LOG_RETENTION_SECONDS": 7 * 24 * 3600,
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
