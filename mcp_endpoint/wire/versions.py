"""Protocol revisions and the HTTP headers that mirror them. Pure Python.

Modern = 2026-07-28 (stateless, per-request ``_meta``); legacy = the initialize-based revisions.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from .errors import HeaderMismatch

MODERN = "2026-07-28"
MODERN_VERSIONS: tuple[str, ...] = (MODERN,)
# newest first; 2024-11-05 is what older stdio hosts (the first SDK releases) still ask for
LEGACY_VERSIONS: tuple[str, ...] = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
LATEST_LEGACY = LEGACY_VERSIONS[0]
DEFAULT_LEGACY = "2025-03-26"  # what a missing MCP-Protocol-Version header means
SUPPORTED_VERSIONS: tuple[str, ...] = MODERN_VERSIONS + LEGACY_VERSIONS

META_PROTOCOL_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CLIENT_CAPABILITIES = "io.modelcontextprotocol/clientCapabilities"
META_CLIENT_INFO = "io.modelcontextprotocol/clientInfo"
META_LOG_LEVEL = "io.modelcontextprotocol/logLevel"
META_SERVER_INFO = "io.modelcontextprotocol/serverInfo"
META_SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"

# Lower-case header names as ASGI delivers them.
H_PROTOCOL_VERSION = "mcp-protocol-version"
H_SESSION_ID = "mcp-session-id"
H_METHOD = "mcp-method"
H_NAME = "mcp-name"
ROUTING_HEADERS = frozenset({H_PROTOCOL_VERSION, H_METHOD, H_NAME})


# Header names as decoded and lower-cased (a handful of names recur on every request); bounded
# so that clients sending ever new names cannot grow it.
_header_names: dict[bytes, str] = {}
_HEADER_NAMES_SIZE = 512


def headers_from_asgi(raw: list[tuple[bytes, bytes]]) -> tuple[dict[str, str], str | None]:
    """ASGI header pairs -> {lower-case name: value} plus the name of a routing header that
    appears more than once (first-copy and last-copy readers would disagree), if any."""
    headers: dict[str, str] = {}
    duplicated: str | None = None
    names = _header_names
    for name_b, value_b in raw:
        name = names.get(name_b)
        if name is None:
            name = name_b.decode("latin-1").lower()
            if len(names) < _HEADER_NAMES_SIZE:
                names[name_b] = name
        value = value_b.decode("latin-1")
        if name in headers:
            if name in ROUTING_HEADERS and duplicated is None:
                duplicated = name
            headers[name] = headers[name] + ", " + value
        else:
            headers[name] = value
    return headers, duplicated

# Which body field ``Mcp-Name`` mirrors, per method.
NAME_PARAM = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def negotiate_legacy(requested: Any) -> str:
    """Version for an InitializeResult: echo a supported legacy one, else offer the newest legacy.
    Never answers the modern revision (legacy clients could not move forward)."""
    if isinstance(requested, str) and requested in LEGACY_VERSIONS:
        return requested
    return LATEST_LEGACY


def is_legacy(version: str | None) -> bool:
    return version in LEGACY_VERSIONS


def at_least(version: str, minimum: str) -> bool:
    """Date-named revisions compare lexically."""
    return version >= minimum


def decode_header_value(value: str) -> str:
    """Decode the ``=?base64?...?=`` sentinel form (Base64 of UTF-8); other values pass through.
    Raises :class:`HeaderMismatch` for characters a header value may not carry or bad Base64."""
    if not (value.isascii() and value.replace("\t", " ").isprintable()):
        raise HeaderMismatch("Header value contains invalid characters")
    if value.startswith("=?base64?") and value.endswith("?=") and len(value) >= 11:
        encoded = value[9:-2]
        try:
            return base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, ValueError, UnicodeDecodeError) as exc:
            raise HeaderMismatch("Header value has an invalid base64 sentinel") from exc
    return value


def _same(header_value: str, body_value: Any) -> bool:
    if isinstance(body_value, bool):
        return header_value == ("true" if body_value else "false")
    if isinstance(body_value, (int, float)):
        try:
            return float(header_value) == float(body_value)
        except ValueError:
            return False
    return isinstance(body_value, str) and header_value == body_value


def check_modern_headers(headers: dict[str, str], method: str, params: dict[str, Any], *,
                         is_request: bool) -> None:
    """Validate ``Mcp-Method`` and ``Mcp-Name`` against the body (2026-07-28 §1.2).
    ``MCP-Protocol-Version`` is compared with ``_meta`` by the dispatcher."""
    if not is_request:
        return
    raw_method = headers.get(H_METHOD)
    if raw_method is None:
        raise HeaderMismatch("Missing Mcp-Method header", data={"header": "Mcp-Method"})
    if decode_header_value(raw_method.strip()) != method:
        raise HeaderMismatch("Mcp-Method header does not match the request method",
                             data={"header": "Mcp-Method"})
    field = NAME_PARAM.get(method)
    if field is None:
        return
    body_value = params.get(field)
    if body_value is None:
        return  # the handler reports the missing parameter (-32602)
    raw_name = headers.get(H_NAME)
    if raw_name is None:
        raise HeaderMismatch("Missing Mcp-Name header", data={"header": "Mcp-Name"})
    if not _same(decode_header_value(raw_name.strip()), body_value):
        raise HeaderMismatch(f"Mcp-Name header does not match params.{field}", data={"header": "Mcp-Name"})
