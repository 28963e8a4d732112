"""The dispatcher the HTTP transport talks to: which wire generation a request speaks.

Transport-neutral: the consumer hands over headers and bodies and gets :class:`Reply` objects
back. Routing on one dual-era endpoint (digest §1.3):

1. JSON array body -> legacy batch (2025-03-26 sessions only);
2. ``MCP-Protocol-Version`` absent or a legacy revision -> legacy wire (``initialize``,
   ``Mcp-Session-Id``, ``ping``, ``logging/setLevel``, ``resources/subscribe``): legacy.py;
3. anything else -> modern 2026-07-28 validation ladder (``_meta`` -> headers -> version):
   modern.py and ladder.py.

stdio is served by stdio.py, with the same method tables, ladder and error mapping.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..handlers.identity import authenticate
from ..handlers.reads import serving
from ..wire import errors, jsonrpc
from ..wire.context import Identity
from ..wire.sessions import peer_key
from ..wire.versions import (
    H_PROTOCOL_VERSION,
    H_SESSION_ID,
    LEGACY_VERSIONS,
    META_PROTOCOL_VERSION,
    MODERN_VERSIONS,
)
from . import legacy, modern
from .replies import Reply, as_mcp_error, error_reply
from .streams import stream_owner

_PEERED_SIZE = 4096  # identities kept with their peer set (one per anonymous network seen lately)


class Dispatcher:
    """Stateless apart from the session store; one instance serves every HTTP request."""

    def __init__(self) -> None:
        self._peered: dict[tuple[int, str], tuple[Identity, Identity]] = {}

    async def authenticate(self, authorization: str | None, client: Any = None, *,
                           resource: str | None = None) -> Identity:
        """``client``: the ASGI scope's (host, port); anonymous sessions are bounded per network.
        ``resource``: this endpoint's public URL, the audience OAuth tokens must carry."""
        try:
            identity = await authenticate(authorization, resource)
        except errors.McpError:
            raise
        except Exception as exc:  # the token lookup hit a database outage: 503, not a crash
            raise as_mcp_error(exc, modern=False) from exc
        if identity.client_id is None and client is not None:
            identity = self._with_peer(identity, peer_key(client))
        return identity

    def _with_peer(self, identity: Identity, peer: str) -> Identity:
        """``identity`` with ``peer`` set. Identities are immutable, and an anonymous caller's
        is one shared object (handlers/identity.py), so its copy per network is made once, not
        per request (``dataclasses.replace`` was 3% of an anonymous read)."""
        peered = self._peered
        key = (id(identity), peer)
        cached = peered.get(key)
        if cached is not None and cached[0] is identity:
            return cached[1]
        result = dataclasses.replace(identity, peer=peer)
        if len(peered) >= _PEERED_SIZE:
            peered.clear()
        # The base identity is held too, so its id cannot be reused by another while cached.
        peered[key] = (identity, result)
        return result

    async def post(self, headers: dict[str, str], body: bytes, identity: Identity, *,
                   duplicated_header: str | None = None) -> Reply:
        """One HTTP POST body. Never raises for protocol problems: returns an error Reply.

        Anonymous callers' streams are budgeted, and may be cancelled, per network
        (``identity.peer``, set by ``authenticate``).

        Marked as served meanwhile, so a catalog build running beside it gives way
        (registry/serving/yielding.py)."""
        with serving():
            return await self._post(headers, body, identity, duplicated_header=duplicated_header)

    async def _post(self, headers: dict[str, str], body: bytes, identity: Identity, *,
                    duplicated_header: str | None = None) -> Reply:
        try:
            obj = jsonrpc.parse_body(body)
        except errors.McpError as exc:
            return error_reply(exc, None, modern=_looks_modern(headers))
        version_header = headers.get(H_PROTOCOL_VERSION)
        if isinstance(obj, list):
            return await legacy.post_batch(obj, headers, identity)
        if version_header is None or version_header in LEGACY_VERSIONS:
            return await legacy.post(obj, headers, identity)
        if headers.get(H_SESSION_ID) is not None and version_header not in MODERN_VERSIONS \
                and not _has_modern_meta(obj):
            # A legacy session client sending a version header we don't know: legacy 400.
            return error_reply(errors.InvalidRequest(
                f"Bad Request: unsupported MCP-Protocol-Version {version_header!r}",
                data={"supported": list(LEGACY_VERSIONS)}), jsonrpc.request_id_of(obj))
        return await modern.post(obj, headers, identity, duplicated_header, owner=stream_owner(identity))

    async def open_stream(self, headers: dict[str, str], identity: Identity) -> Reply:
        """HTTP GET: the legacy session's standalone SSE stream; 405 on the modern wire."""
        return await legacy.open_stream(headers, identity)

    async def end_session(self, headers: dict[str, str], identity: Identity) -> Reply:
        """HTTP DELETE: end a legacy session (404 when unknown or already ended)."""
        return await legacy.end_session(headers, identity)


def _looks_modern(headers: dict[str, str]) -> bool:
    v = headers.get(H_PROTOCOL_VERSION)
    return v is not None and v not in LEGACY_VERSIONS


def _has_modern_meta(obj: Any) -> bool:
    params = obj.get("params") if isinstance(obj, dict) else None
    meta = params.get("_meta") if isinstance(params, dict) else None
    return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta


dispatcher = Dispatcher()
