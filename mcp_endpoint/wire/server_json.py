"""The `server.json` that describes this server to the MCP Registry, built from settings.

Remote servers are listed by URL with their transport and the headers a client must send; the
bearer token of an MCP client (admin: MCP clients) is declared as a secret header, required
unless anonymous access is on.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..settings import mcp_settings

SCHEMA = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"


class ServerJsonError(ValueError):
    """The settings do not describe a publishable server (no public URL, or a bad name)."""


def reverse_dns_name(url: str) -> str:
    """https://registry.example.com/mcp -> com.example.registry/<server name>."""
    host = urlsplit(url).hostname or ""
    if not host or "." not in host:
        raise ServerJsonError(f"cannot derive a reverse-DNS registry name from {url!r}: set MCP_REGISTRY_NAME")
    return ".".join(reversed(host.split("."))) + "/" + str(mcp_settings.SERVER_NAME)


def server_json(url: str | None = None, *, name: str | None = None) -> dict[str, Any]:
    url = url or mcp_settings.PUBLIC_URL
    if not url:
        raise ServerJsonError("the server's public URL is unknown: set MCP_PUBLIC_URL or pass --url")
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise ServerJsonError(f"{url!r} is not an http(s) URL of the MCP endpoint")
    name = name or mcp_settings.REGISTRY_NAME or reverse_dns_name(url)
    if "/" not in name:
        raise ServerJsonError(f"the registry name {name!r} must look like com.example/server-name")
    authorization = {
        "name": "Authorization",
        "description": "Bearer token of an MCP client of this registry (admin: MCP clients → Add), "
                       "sent as 'Bearer mcpr_…'.",
        "isRequired": not mcp_settings.ALLOW_ANONYMOUS,
        "isSecret": True,
    }
    document: dict[str, Any] = {
        "$schema": SCHEMA,
        "name": name,
        "title": mcp_settings.SERVER_TITLE,
        "description": mcp_settings.SERVER_DESCRIPTION,
        "version": mcp_settings.SERVER_VERSION,
        "remotes": [{"type": "streamable-http", "url": url, "headers": [authorization]}],
    }
    if mcp_settings.WEBSITE_URL:
        document["websiteUrl"] = mcp_settings.WEBSITE_URL
    return document
