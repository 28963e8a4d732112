"""The protected resource's public identity: its URL (the token audience) and its metadata URL.

Both derive from MCP_ENDPOINT["PUBLIC_URL"] when set (a proxy in front), else from the request's
scheme and Host, so discovery works on a laptop and behind a reverse proxy alike."""

from __future__ import annotations

from urllib.parse import urlsplit

from registry.conf import mcp_public_url

MCP_PATH = "/mcp"  # where config/asgi.py routes the MCP transport (mcp_endpoint/routing.py)
SCOPE = "mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"


def _public_url() -> str:
    return mcp_public_url().rstrip("/")


def resource_url(scheme: str, host: str) -> str:
    """The MCP endpoint's canonical URL: what clients send as ``resource`` (RFC 8707)."""
    return _public_url() or f"{scheme}://{host}{MCP_PATH}"


def metadata_url(scheme: str, host: str) -> str:
    """RFC 9728 §3.1: the well-known URI with the resource's path appended."""
    resource = urlsplit(resource_url(scheme, host))
    return f"{resource.scheme}://{resource.netloc}{METADATA_PATH}{resource.path.rstrip('/')}"


def challenge(scheme: str, host: str, error: str | None = None) -> str:
    """``WWW-Authenticate`` value for a refused MCP request (RFC 6750 §3, RFC 9728 §5.1)."""
    params = [f'error="{error}"'] if error else []
    params += [f'resource_metadata="{metadata_url(scheme, host)}"', f'scope="{SCOPE}"']
    return "Bearer " + ", ".join(params)
