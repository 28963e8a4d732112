"""The 2026-07-28 wire over HTTP: stateless, every request carrying its own ``_meta`` and the
headers that mirror it, validated by the ladder; ``server/discover`` and ``subscriptions/listen``
answered here, every other method by its handler. Errors are HTTP 400 (protocol) or 404 (an
unknown or removed method) with their JSON-RPC body.
"""

from __future__ import annotations

from typing import Any

from ..notify.hub import hub as notification_hub
from ..notify.listeners import StreamLimitReached
from ..wire import errors, jsonrpc
from ..wire.context import Identity, RequestContext
from ..wire.jsonrpc import Message
from ..wire.versions import H_PROTOCOL_VERSION, MODERN_VERSIONS
from .discovery import discover_result
from .ladder import modern_context, unsupported
from .methods import MODERN_METHODS, call
from .replies import Reply, error_reply, http_status
from .streams import listen_stream


async def post(obj: Any, headers: dict[str, str], identity: Identity, duplicated_header: str | None, *,
               owner: Any = None) -> Reply:
    """One 2026-07-28 POST body (``owner``: whose streams a ``notifications/cancelled`` may end)."""
    rid = jsonrpc.request_id_of(obj)
    try:
        if not isinstance(obj, dict):
            raise errors.InvalidRequest("Body must be a single JSON-RPC request or notification object")
        msg = jsonrpc.classify(obj)
        if msg.kind == "response":
            return Reply(202, modern=True)  # nothing to answer; accepted and dropped
        if msg.kind == "notification":
            if headers.get(H_PROTOCOL_VERSION) not in MODERN_VERSIONS:
                raise unsupported(headers.get(H_PROTOCOL_VERSION))
            if msg.method == "notifications/cancelled":
                # Closing the stream is the cancellation on HTTP; a client that sends this
                # anyway gets its own listen stream (never anyone else's) ended too.
                request_id = msg.params.get("requestId")
                if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
                    notification_hub.cancel(owner, request_id)
            return Reply(202, modern=True)
        ctx = modern_context(msg, identity, headers=headers, duplicated_header=duplicated_header)
    except Exception as exc:
        return error_reply(exc, rid, modern=True)
    if msg.method == "server/discover":
        return Reply(200, jsonrpc.encode_result(msg.id, discover_result(ctx)), modern=True)
    if msg.method == "subscriptions/listen":
        return await listen(msg, ctx, owner)
    body, err = await call(MODERN_METHODS, msg, ctx)
    return Reply(http_status(err, modern=True), body, modern=True)


async def listen(msg: Message, ctx: RequestContext, owner: Any = None) -> Reply:
    try:
        stream = await listen_stream(msg, ctx, owner)
    except StreamLimitReached as exc:
        return error_reply(errors.TooManyStreams(str(exc)), msg.id, modern=True)
    except Exception as exc:  # bad filter; the catalog's first build hit an outage (503)
        return error_reply(exc, msg.id, modern=True)
    return Reply(200, stream=stream, modern=True)
