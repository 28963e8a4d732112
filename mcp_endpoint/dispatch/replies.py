"""What the dispatcher answers: a :class:`Reply`, and every exception mapped to its JSON-RPC error
and HTTP status in one place."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..handlers.domain_errors import translate_domain_error, translate_outage
from ..wire import errors, jsonrpc
from ..wire.context import RequestContext
from .streams import Stream

logger = logging.getLogger(__name__)

# HTTP status of a JSON-RPC error on the modern wire (as the SDK's ERROR_CODE_HTTP_STATUS).
_MODERN_STATUS = {
    errors.PARSE_ERROR: 400, errors.INVALID_REQUEST: 400, errors.INVALID_PARAMS: 400,
    errors.HEADER_MISMATCH: 400, errors.MISSING_CLIENT_CAPABILITY: 400,
    errors.UNSUPPORTED_PROTOCOL_VERSION: 400, errors.METHOD_NOT_FOUND: 404,
}


@dataclass(slots=True)
class Reply:
    status: int
    body: bytes | None = None          # one JSON-RPC message or a batch array; None = empty
    session_id: str | None = None      # Mcp-Session-Id to set (initialize)
    stream: Stream | None = None
    modern: bool = False
    allow: str | None = None           # Allow header for 405
    authenticate: bool = False         # add WWW-Authenticate: Bearer (401)
    extra: list[tuple[bytes, bytes]] = field(default_factory=list)


def error_reply(exc: BaseException, rid: Any = None, *, modern: bool = False) -> Reply:
    """Exception -> JSON-RPC error reply. The single place that picks codes and statuses."""
    err = as_mcp_error(exc, modern=modern)
    return Reply(http_status(err, modern=modern), jsonrpc.encode_error(rid, err), modern=modern,
                 authenticate=isinstance(err, errors.Unauthorized))


def http_status(err: errors.McpError | None, *, modern: bool) -> int:
    """The HTTP status of a reply carrying `err` (None: a result). An outage is 503 on both wires
    (clients retry it); the modern wire also maps its protocol errors (digest §1.4)."""
    if err is None:
        return 200
    if modern:
        return err.http_status or _MODERN_STATUS.get(err.code, 200)
    return err.http_status or 200


def as_mcp_error(exc: BaseException, *, modern: bool) -> errors.McpError:
    if not isinstance(exc, errors.McpError):
        unavailable = translate_outage(exc)
        if unavailable is not None:
            logger.warning("%s while handling an MCP request: %r", unavailable.message, exc)
            return unavailable
        translated = translate_domain_error(exc)
        if translated is None:
            logger.exception("Unexpected error while handling an MCP request", exc_info=exc)
            return errors.InternalError()
        exc = translated
    if isinstance(exc, errors.ResourceNotFound):
        # -32002 is the legacy code; 2026-07-28 forbids it and uses -32602 (both with data.uri).
        return errors.McpError(exc.message, data={"uri": exc.uri},
                               code=errors.INVALID_PARAMS if modern else errors.RESOURCE_NOT_FOUND)
    return exc


def error_bytes(exc: BaseException, rid: Any, *, modern: bool) -> bytes:
    return jsonrpc.encode_error(rid, as_mcp_error(exc, modern=modern))


def encode_result(rid: Any, result: Any, ctx: RequestContext) -> bytes:
    if ctx.modern and isinstance(result, dict) and "resultType" not in result:
        result = ctx.complete(result)  # every 2026-07-28 result carries resultType
    return jsonrpc.encode_result(rid, result)
