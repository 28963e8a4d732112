"""The registry's settings: one namespaced object, `registry_settings`, read from
``settings.REGISTRY`` with the defaults below and reloaded when tests change the setting.

    MAX_UPLOAD_BYTES        largest uploaded file (image, audio, resource bytes)
    MAX_IMPORT_BYTES        largest prompts-as-code YAML file read (command line and API)
    PROTECTED_LABELS        labels created protected (four eyes); a label row's flag decides afterwards
    CONTENT_CACHE_BYTES     per-process byte budget of the served-content cache
    SHOW_NAMES_TO_CLIENTS   whether MCP clients see people's names in the built-in change logs
    CHANGE_LOG_RETENTION_SECONDS  change-log rows older than this are pruned (MCP_ENDPOINT's key of
                            the same name is read too, for settings written before the registry owned it)
    PUBLIC_URL              where people reach the admin from outside (https://registry.example.com):
                            the links in e-mails; "" falls back to the origin of MCP_PUBLIC_URL
    MAIL_DELIVERY_THREAD    whether server processes send due e-mail in a background thread too
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.signals import setting_changed

DEFAULTS: dict[str, Any] = {
    "MAX_UPLOAD_BYTES": 5 * 1024 * 1024,
    "MAX_IMPORT_BYTES": 20 * 1024 * 1024,
    "PROTECTED_LABELS": ["production"],
    "CONTENT_CACHE_BYTES": 64 * 1024 * 1024,
    "SHOW_NAMES_TO_CLIENTS": False,
    "CHANGE_LOG_RETENTION_SECONDS": 7 * 24 * 3600,
    "PUBLIC_URL": "",
    "MAIL_DELIVERY_THREAD": True,
}
_FALLBACKS = {"CHANGE_LOG_RETENTION_SECONDS": "MCP_ENDPOINT"}


class RegistrySettings:
    def __init__(self) -> None:
        self._cached: dict[str, Any] = {}

    def __getattr__(self, name: str) -> Any:
        if name not in DEFAULTS:
            raise AttributeError(f"Invalid REGISTRY setting: {name!r}")
        try:
            return self._cached[name]
        except KeyError:
            value = self._read(name)
            self._cached[name] = value
            return value

    @staticmethod
    def _read(name: str) -> Any:
        own = getattr(settings, "REGISTRY", None) or {}
        if name in own:
            return own[name]
        older = getattr(settings, _FALLBACKS.get(name, ""), None) or {}
        return older.get(name, DEFAULTS[name])

    def reload(self) -> None:
        self._cached.clear()


registry_settings = RegistrySettings()


def _reload(*, setting: str, **kwargs: Any) -> None:
    if setting in ("REGISTRY", *_FALLBACKS.values()):
        registry_settings.reload()


setting_changed.connect(_reload, dispatch_uid="registry.conf.reload")


def max_upload_bytes() -> int:
    return int(registry_settings.MAX_UPLOAD_BYTES)


def max_document_bytes() -> int:
    """Largest prompts-as-code YAML file read (command line and API): parsing holds it all in memory."""
    return int(registry_settings.MAX_IMPORT_BYTES)


def mcp_public_url() -> str:
    """The MCP endpoint's public URL (``MCP_ENDPOINT["PUBLIC_URL"]``, "" when unset), for the apps
    below the endpoint that must name it (the e-mail links' fallback origin, OAuth's resource
    URL): read here once, as the endpoint's own `mcp_settings.PUBLIC_URL` reads it."""
    return str((getattr(settings, "MCP_ENDPOINT", None) or {}).get("PUBLIC_URL") or "")
