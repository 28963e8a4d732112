"""The legacy wire (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05) over HTTP: ``initialize`` opens
a session (``Mcp-Session-Id``), POSTs are answered in it, 2025-03-26 sessions may batch, a GET
opens the session's notification stream and a DELETE ends the session.
"""

from __future__ import annotations

from typing import Any

from ..notify.listeners import StreamLimitReached, session_group
from ..settings import mcp_settings
from ..wire import errors, jsonrpc
from ..wire.batches import run_batch
from ..wire.context import Identity, RequestContext
from ..wire.jsonrpc import Message
from ..wire.sessions import Session
from ..wire.sessions import store as session_store
from ..wire.versions import (
    DEFAULT_LEGACY,
    H_PROTOCOL_VERSION,
    H_SESSION_ID,
    LEGACY_VERSIONS,
    negotiate_legacy,
)
from .discovery import initialize_result, server_info
from .methods import LEGACY_METHODS, call
from .replies import Reply, as_mcp_error, error_bytes, error_reply, http_status
from .streams import close_streams, session_stream, stream_owner


def context(session: Session, identity: Identity) -> RequestContext:
    return RequestContext(version=session.protocol_version, modern=False, identity=identity,
                          server_info=server_info(session.protocol_version),
                          ttl_ms=mcp_settings.CACHE_TTL_MS, session=session)


async def session_of(sid: str, identity: Identity, *, fresh: bool = False) -> Session:
    try:
        session = await session_store.get(sid, fresh=fresh)
    except Exception as exc:  # the database is down: a JSON-RPC error (503), never a crash
        raise as_mcp_error(exc, modern=False) from exc
    if session is None or session.client_id != identity.client_id:
        raise errors.SessionNotFound()
    return session


async def post(obj: Any, headers: dict[str, str], identity: Identity) -> Reply:
    """One legacy message (not a batch): ``initialize``, or a message of an open session."""
    rid = jsonrpc.request_id_of(obj)
    try:
        msg = jsonrpc.classify(obj)
    except errors.McpError as exc:
        return error_reply(exc, rid)
    if msg.method == "initialize":
        if not msg.is_request:
            return Reply(202)
        return await initialize(msg, identity)
    sid = headers.get(H_SESSION_ID)
    try:
        if sid is None:
            raise errors.SessionRequired()
        session = await session_of(sid, identity)
    except errors.McpError as exc:
        return error_reply(exc, rid)
    if not msg.is_request:
        return Reply(202)
    body, err = await call(LEGACY_METHODS, msg, context(session, identity))
    return Reply(http_status(err, modern=False), body)


async def post_batch(items: list[Any], headers: dict[str, str], identity: Identity) -> Reply:
    if not items:
        return error_reply(errors.InvalidRequest("Invalid request: empty batch"))
    if any(isinstance(o, dict) and o.get("method") == "initialize" for o in items):
        return error_reply(errors.InvalidRequest("initialize must not be part of a batch"))
    version_header = headers.get(H_PROTOCOL_VERSION)
    if version_header is not None and version_header != DEFAULT_LEGACY:
        return error_reply(errors.InvalidRequest("Batches are only allowed at 2025-03-26"))
    sid = headers.get(H_SESSION_ID)
    try:
        if sid is None:
            raise errors.SessionRequired()
        session = await session_of(sid, identity)
    except errors.McpError as exc:
        return error_reply(exc)
    if session.protocol_version != DEFAULT_LEGACY:
        return error_reply(errors.InvalidRequest(
            f"Batches are only allowed at 2025-03-26 (session negotiated {session.protocol_version})"))
    ctx = context(session, identity)
    statuses: set[int] = set()

    async def one(obj: Any) -> bytes | None:
        try:
            msg = jsonrpc.classify(obj)
        except errors.McpError as exc:
            statuses.add(200)
            return error_bytes(exc, jsonrpc.request_id_of(obj), modern=False)
        if not msg.is_request:
            return None
        body, err = await call(LEGACY_METHODS, msg, ctx)
        statuses.add(http_status(err, modern=False))
        return body

    out = await run_batch(items, one)
    if isinstance(out, bytes):
        return Reply(400, out)
    if not out:
        return Reply(202)
    # 503 only when the outage failed every request of the batch: one answer per batch.
    return Reply(503 if statuses == {503} else 200, jsonrpc.encode_batch(out))


async def initialize(msg: Message, identity: Identity) -> Reply:
    params = msg.params
    version = negotiate_legacy(params.get("protocolVersion"))
    client_info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
    caps = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else {}
    try:
        session = await session_store.create(protocol_version=version, client_info=client_info,
                                             client_capabilities=caps, client_id=identity.client_id,
                                             peer=identity.peer)
    except Exception as exc:  # database down etc.: internal error, logged
        return error_reply(exc, msg.id)
    return Reply(200, jsonrpc.encode_result(msg.id, initialize_result(version)),
                 session_id=session.session_id)


async def open_stream(headers: dict[str, str], identity: Identity) -> Reply:
    """HTTP GET: the legacy session's standalone SSE stream; 405 on the modern wire.

    Its events carry change-log positions as SSE ids; a ``Last-Event-ID`` replays what
    changed since then for this session (see :mod:`mcp_endpoint.notify.replay`)."""
    version_header = headers.get(H_PROTOCOL_VERSION)
    sid = headers.get(H_SESSION_ID)
    if sid is None:
        if version_header is not None and version_header in LEGACY_VERSIONS:
            return error_reply(errors.SessionRequired())
        return method_not_allowed()
    if version_header is not None and version_header not in LEGACY_VERSIONS:
        return method_not_allowed()
    try:
        session = await session_of(sid, identity, fresh=True)  # subscriptions may come from another worker
    except errors.McpError as exc:
        return error_reply(exc)
    try:
        stream = await session_stream(session, identity, owner=stream_owner(identity),
                                      last_event_id=headers.get("last-event-id"))
    except StreamLimitReached as exc:
        return error_reply(errors.TooManyStreams(str(exc)))
    except Exception as exc:  # the catalog's first build or the replay hit an outage (503)
        return error_reply(exc)
    return Reply(200, stream=stream, session_id=session.session_id)


async def end_session(headers: dict[str, str], identity: Identity) -> Reply:
    """HTTP DELETE: end a legacy session (404 when unknown or already ended)."""
    version_header = headers.get(H_PROTOCOL_VERSION)
    sid = headers.get(H_SESSION_ID)
    if version_header is not None and version_header not in LEGACY_VERSIONS and sid is None:
        return method_not_allowed()
    if sid is None:
        return error_reply(errors.SessionRequired())
    try:
        session = await session_of(sid, identity)
    except errors.McpError as exc:
        return error_reply(exc)
    if not await session_store.end(session.session_id):
        return error_reply(errors.SessionNotFound())
    await close_streams(session_group(session.session_id))
    return Reply(200)


def method_not_allowed() -> Reply:
    """GET/DELETE without a legacy session: the modern wire is POST only."""
    reply = error_reply(errors.MethodNotAllowed("Method Not Allowed: use POST (GET and DELETE need a "
                                                "2025-xx Mcp-Session-Id)"))
    reply.allow = "POST"
    return reply
