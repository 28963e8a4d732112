"""The 2026-07-28 validation ladder: is this request one the modern wire serves, and in what context?

``_meta`` keys -> the HTTP headers that mirror them -> the version -> ``clientCapabilities`` ->
the method. The first rung a request fails decides its error. HTTP and stdio climb this one
ladder, so the same request gets the same error over both (stdio has no headers: it skips that
rung).
"""

from __future__ import annotations

from typing import Any

from ..settings import mcp_settings
from ..wire import errors
from ..wire.context import Identity, RequestContext
from ..wire.jsonrpc import Message
from ..wire.versions import (
    H_PROTOCOL_VERSION,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    check_modern_headers,
)
from .discovery import server_info
from .methods import MODERN_METHODS, MODERN_SPECIAL


def modern_context(msg: Message, identity: Identity, *, headers: dict[str, str] | None = None,
                   duplicated_header: str | None = None) -> RequestContext:
    """A valid 2026-07-28 request's context, or the error of the first rung it fails.

    ``headers``: the HTTP request's (lower-case names), checked against the body; None on stdio.
    ``duplicated_header``: a routing header the HTTP request carried more than once."""
    meta = msg.params.get("_meta")
    if not isinstance(meta, dict):
        raise errors.InvalidParams(
            f"params._meta must carry {META_PROTOCOL_VERSION!r} and {META_CLIENT_CAPABILITIES!r}",
            http_status=400)
    if META_PROTOCOL_VERSION not in meta or META_CLIENT_CAPABILITIES not in meta:  # no list built per request
        missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta]
        raise errors.InvalidParams("params._meta is missing required key(s): " + ", ".join(missing),
                                   http_status=400)
    version = meta[META_PROTOCOL_VERSION]
    if headers is not None:
        _check_headers(msg, version, headers, duplicated_header)
    if not isinstance(version, str):
        raise errors.InvalidParams("params._meta protocolVersion must be a string", http_status=400)
    if version not in MODERN_VERSIONS:
        raise unsupported(version)
    caps = meta[META_CLIENT_CAPABILITIES]
    if not isinstance(caps, dict):
        raise errors.InvalidParams("params._meta clientCapabilities must be an object", http_status=400)
    if msg.method not in MODERN_METHODS and msg.method not in MODERN_SPECIAL:
        raise errors.MethodNotFound(f"Method not found: {msg.method}")
    return RequestContext(version=version, modern=True, identity=identity, server_info=server_info(version),
                          ttl_ms=mcp_settings.CACHE_TTL_MS, client_capabilities=caps)


def _check_headers(msg: Message, version: Any, headers: dict[str, str],
                   duplicated_header: str | None) -> None:
    """HTTP only: the routing headers must appear once and mirror the body."""
    if duplicated_header:
        raise errors.HeaderMismatch(f"{duplicated_header} header appears more than once")
    if headers.get(H_PROTOCOL_VERSION) != version:
        raise errors.HeaderMismatch("MCP-Protocol-Version header does not match params._meta protocolVersion")
    check_modern_headers(headers, msg.method or "", msg.params, is_request=True)


def unsupported(requested: Any) -> errors.McpError:
    return errors.UnsupportedProtocolVersion(
        f"Unsupported protocol version: {requested!r}",
        data={"supported": list(SUPPORTED_VERSIONS), "requested": requested})
