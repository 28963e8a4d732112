"""Domain errors as JSON-RPC errors: the registry's exceptions, and its outages, mapped in one place.

The dispatcher calls these for any exception a handler lets through (and picks the code each
wire generation wants for an unknown resource); handlers only catch a domain error where it
means something else to them (a form to fill in, a tool result).
"""

from __future__ import annotations

from ..wire import errors
from .reads import (
    ArgumentErrors,
    ContentMissing,
    InvalidArguments,
    InvalidUri,
    MissingArguments,
    SnippetUnavailable,
    UnknownPrompt,
    UnknownResource,
    outage_of,
)


def translate_outage(exc: BaseException) -> errors.McpError | None:
    """A dependency outage (database, content store; registry/storage/outages.py) -> -32603 with HTTP 503."""
    outage = outage_of(exc)
    return None if outage is None else errors.ServiceUnavailable(outage.message)


def translate_domain_error(exc: BaseException) -> errors.McpError | None:
    """Registry error -> protocol error kind (the dispatcher picks era-specific codes)."""
    if isinstance(exc, UnknownPrompt):
        return errors.InvalidParams(exc.message, data={"name": exc.name})
    if isinstance(exc, MissingArguments):
        return errors.InvalidParams(exc.message, data={"missing": list(exc.names)})
    if isinstance(exc, ArgumentErrors):
        return errors.InvalidParams(exc.message, data={"invalid": [dict(i) for i in exc.invalid],
                                                       "missing": list(exc.missing)})
    if isinstance(exc, UnknownResource):
        return errors.ResourceNotFound(exc.uri)
    if isinstance(exc, InvalidUri):
        return errors.InvalidParams(exc.message, data={"uri": exc.uri})
    if isinstance(exc, InvalidArguments):
        return errors.InvalidParams(exc.message)
    if isinstance(exc, SnippetUnavailable):  # a snippet it includes has no version to serve: not the client's fault
        return errors.InternalError(exc.message)
    if isinstance(exc, ContentMissing):
        return errors.InternalError(exc.message, data={"sha256": exc.sha256})
    return None
