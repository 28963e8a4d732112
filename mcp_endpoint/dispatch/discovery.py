"""What this server is and serves: its capabilities, its ``Implementation`` per revision, and the
results of ``initialize`` (legacy) and ``server/discover`` (2026-07-28)."""

from __future__ import annotations

from typing import Any

from ..settings import mcp_settings, on_reload
from ..wire import shapes
from ..wire.context import RequestContext
from ..wire.versions import SUPPORTED_VERSIONS


def capabilities(*, modern: bool, version: str | None = None) -> dict[str, Any]:
    """Exactly what is served. ``logging`` only where logging/setLevel exists (legacy); the
    ``completions`` capability only from 2025-03-26, which defined it (completion/complete
    itself is answered at 2024-11-05 too)."""
    caps: dict[str, Any] = {
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "completions": {},
        "tools": {},
    }
    if not modern:
        caps["logging"] = {}
    if version is not None and version < "2025-03-26":
        caps.pop("completions")
    return caps


_server_info_cache: dict[str, dict[str, Any]] = {}
on_reload(_server_info_cache.clear)


def server_info(version: str) -> dict[str, Any]:
    """``Implementation`` for ``version`` (cached: it only changes with settings)."""
    cached = _server_info_cache.get(version)
    if cached is None:
        cached = _server_info_cache[version] = _build_server_info(version)
    return cached


def _build_server_info(version: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": mcp_settings.SERVER_NAME,
        "title": mcp_settings.SERVER_TITLE,
        "version": mcp_settings.SERVER_VERSION,
        "description": mcp_settings.SERVER_DESCRIPTION,
    }
    if mcp_settings.WEBSITE_URL:
        info["websiteUrl"] = mcp_settings.WEBSITE_URL
    return shapes.shape_server_info(info, version)


def initialize_result(version: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": capabilities(modern=False, version=version),
        "serverInfo": server_info(version),
    }
    if mcp_settings.INSTRUCTIONS:
        result["instructions"] = mcp_settings.INSTRUCTIONS
    return result


def discover_result(ctx: RequestContext) -> dict[str, Any]:
    result: dict[str, Any] = {
        "supportedVersions": list(SUPPORTED_VERSIONS),
        "capabilities": capabilities(modern=True),
    }
    if mcp_settings.INSTRUCTIONS:
        result["instructions"] = mcp_settings.INSTRUCTIONS
    return ctx.complete(result, cacheable=True)
