"""MCP/JSON-RPC error hierarchy. Pure Python: no Django, no registry.

Handlers and the dispatcher raise these; the dispatcher turns them into JSON-RPC error
objects (and HTTP statuses) in one place. ``http_status`` is the status the Streamable HTTP
transport answers with when this error is the only reply; ``None`` means "the usual 200".
"""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
SESSION_NOT_FOUND = -32001  # implementation-defined (legacy range), as the SDK uses
RESOURCE_NOT_FOUND = -32002  # legacy only; forbidden at 2026-07-28
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022


class McpError(Exception):
    """A JSON-RPC error to send back. ``data`` must be JSON-serialisable."""

    code: int = INTERNAL_ERROR
    default_message = "Internal error"
    http_status: int | None = None

    def __init__(self, message: str | None = None, *, data: Any = None, code: int | None = None,
                 http_status: int | None = None) -> None:
        self.message = message or self.default_message
        self.data = data
        if code is not None:
            self.code = code
        if http_status is not None:
            self.http_status = http_status
        super().__init__(self.message)

    def to_error(self) -> dict[str, Any]:
        err: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.data is not None:
            err["data"] = self.data
        return err


class ParseError(McpError):
    code = PARSE_ERROR
    default_message = "Parse error"
    http_status = 400


class InvalidRequest(McpError):
    code = INVALID_REQUEST
    default_message = "Invalid request"
    http_status = 400


class MethodNotFound(McpError):
    code = METHOD_NOT_FOUND
    default_message = "Method not found"


class InvalidParams(McpError):
    code = INVALID_PARAMS
    default_message = "Invalid params"


class InternalError(McpError):
    code = INTERNAL_ERROR
    default_message = "Internal error"


class ServiceUnavailable(InternalError):
    """A dependency (the database) is unreachable: -32603 with HTTP 503, so clients retry."""

    http_status = 503
    default_message = "Service Unavailable: the registry database is unreachable; retry shortly"


class ResourceNotFound(McpError):
    """Unknown resource URI. The dispatcher picks the code per era (-32002 legacy, -32602 modern)."""

    code = RESOURCE_NOT_FOUND
    default_message = "Resource not found"

    def __init__(self, uri: str, message: str | None = None) -> None:
        self.uri = uri
        super().__init__(message or f"Resource not found: {uri}", data={"uri": uri})


class HeaderMismatch(McpError):
    code = HEADER_MISMATCH
    default_message = "Header mismatch"
    http_status = 400


class MissingClientCapability(McpError):
    code = MISSING_CLIENT_CAPABILITY
    default_message = "Missing required client capability"
    http_status = 400


class UnsupportedProtocolVersion(McpError):
    code = UNSUPPORTED_PROTOCOL_VERSION
    default_message = "Unsupported protocol version"
    http_status = 400


# Transport-level refusals. They still carry a JSON-RPC error body so that dual-era clients
# can tell them apart from modern protocol errors.


class TransportError(McpError):
    code = INVALID_REQUEST
    http_status = 400


class SessionRequired(TransportError):
    default_message = "Bad Request: Mcp-Session-Id header is required"


class SessionNotFound(TransportError):
    code = SESSION_NOT_FOUND
    default_message = "Session not found"
    http_status = 404


class Unauthorized(TransportError):
    default_message = "Unauthorized: a valid bearer token is required"
    http_status = 401
    bearer_error: str | None = None    # RFC 6750 error code for the challenge, when a token was sent


class InvalidToken(Unauthorized):
    bearer_error = "invalid_token"


class InsufficientScope(TransportError):
    """A valid OAuth token without the scope /mcp needs (RFC 6750 §3.1: 403)."""

    default_message = "Forbidden: the access token lacks the required scope"
    http_status = 403
    bearer_error = "insufficient_scope"


class Forbidden(TransportError):
    default_message = "Forbidden"
    http_status = 403


class NotAcceptable(TransportError):
    default_message = "Not Acceptable: Accept must allow application/json or text/event-stream"
    http_status = 406


class UnsupportedMediaType(TransportError):
    default_message = "Unsupported Media Type: Content-Type must be application/json"
    http_status = 415


class PayloadTooLarge(TransportError):
    default_message = "Payload Too Large"
    http_status = 413


class TooManyStreams(TransportError):
    """Open-stream limits (per process, per client) protect delivery to everyone else."""

    http_status = 429


class MethodNotAllowed(TransportError):
    default_message = "Method Not Allowed"
    http_status = 405
