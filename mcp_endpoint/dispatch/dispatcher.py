"""Protocol core: era/version routing, the method tables, and error mapping in one place.

Transport-neutral: the HTTP consumer and the stdio command hand over headers and bodies and
get :class:`Reply` objects back. Routing on one dual-era endpoint (digest §1.3):

1. JSON array body -> legacy batch (2025-03-26 sessions only);
2. ``MCP-Protocol-Version`` absent or a legacy revision -> legacy wire (``initialize``,
   ``Mcp-Session-Id``, ``ping``, ``logging/setLevel``, ``resources/subscribe``);
3. anything else -> modern 2026-07-28 validation ladder (``_meta`` -> headers -> version).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..handlers.completion import completion_complete
from ..handlers.domain_errors import translate_domain_error, translate_outage
from ..handlers.identity import authenticate, authenticate_stdio, still_authorised
from ..handlers.lists import prompts_list, resource_templates_list, resources_list
from ..handlers.prompts import prompts_get
from ..handlers.resources import canonical_uri, resources_read
from ..handlers.session import logging_set_level
from ..handlers.subscriptions import resources_subscribe, resources_unsubscribe
from ..handlers.tools import tools_call, tools_list
from ..notify import replay
from ..notify.hub import hub as notification_hub
from ..notify.listeners import DROP, Listener, StreamLimitReached, session_group
from ..settings import mcp_settings, on_reload
from ..wire import errors, jsonrpc, shapes
from ..wire.batches import run_batch
from ..wire.context import Identity, RequestContext
from ..wire.jsonrpc import Message, RawJSON
from ..wire.sessions import Session, peer_key
from ..wire.sessions import store as session_store
from ..wire.versions import (
    DEFAULT_LEGACY,
    H_PROTOCOL_VERSION,
    H_SESSION_ID,
    LEGACY_VERSIONS,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    META_SUBSCRIPTION_ID,
    MODERN,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    check_modern_headers,
    negotiate_legacy,
)

logger = logging.getLogger(__name__)

Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[Any]]

# HTTP status of a JSON-RPC error on the modern wire (as the SDK's ERROR_CODE_HTTP_STATUS).
_MODERN_STATUS = {
    errors.PARSE_ERROR: 400, errors.INVALID_REQUEST: 400, errors.INVALID_PARAMS: 400,
    errors.HEADER_MISMATCH: 400, errors.MISSING_CLIENT_CAPABILITY: 400,
    errors.UNSUPPORTED_PROTOCOL_VERSION: 400, errors.METHOD_NOT_FOUND: 404,
}

_COMMON: dict[str, Handler] = {
    "prompts/list": prompts_list,
    "prompts/get": prompts_get,
    "resources/list": resources_list,
    "resources/read": resources_read,
    "resources/templates/list": resource_templates_list,
    "completion/complete": completion_complete,
    "tools/list": tools_list,
    "tools/call": tools_call,
}


async def _ping(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    return {}


LEGACY_METHODS: dict[str, Handler] = dict(
    _COMMON,
    **{
        "ping": _ping,
        "logging/setLevel": logging_set_level,
        "resources/subscribe": resources_subscribe,
        "resources/unsubscribe": resources_unsubscribe,
    },
)
# server/discover and subscriptions/listen are dispatched specially (see _modern_request).
MODERN_METHODS: dict[str, Handler] = dict(_COMMON)


def capabilities(*, modern: bool, version: str | None = None) -> dict[str, Any]:
    """Exactly what is served. ``logging`` only where logging/setLevel exists (legacy); the
    ``completions`` capability only from 2025-03-26, which defined it (completion/complete
    itself is answered at 2024-11-05 too)."""
    caps: dict[str, Any] = {
        "prompts": {"listChanged": True},
        "resources": {"subscribe": True, "listChanged": True},
        "completions": {},
        "tools": {},
    }
    if not modern:
        caps["logging"] = {}
    if version is not None and version < "2025-03-26":
        caps.pop("completions")
    return caps


_server_info_cache: dict[str, dict[str, Any]] = {}
on_reload(_server_info_cache.clear)


def server_info(version: str) -> dict[str, Any]:
    """``Implementation`` for ``version`` (cached: it only changes with settings)."""
    cached = _server_info_cache.get(version)
    if cached is None:
        cached = _server_info_cache[version] = _build_server_info(version)
    return cached


def _build_server_info(version: str) -> dict[str, Any]:
    info: dict[str, Any] = {
        "name": mcp_settings.SERVER_NAME,
        "title": mcp_settings.SERVER_TITLE,
        "version": mcp_settings.SERVER_VERSION,
        "description": mcp_settings.SERVER_DESCRIPTION,
    }
    if mcp_settings.WEBSITE_URL:
        info["websiteUrl"] = mcp_settings.WEBSITE_URL
    return shapes.shape_server_info(info, version)




@dataclass(slots=True)
class Stream:
    """A long-lived SSE stream the transport keeps open (legacy GET or modern listen).

    ``first``: messages to send immediately; ``groups``: channel-layer groups to join;
    ``render(event)``: turns a channel-layer event into a message to send (or None to skip);
    ``closing``: the listen result, sent only when a notifier ends the stream for good on
    purpose (the CLOSE sentinel); a restart, an overflow, a cancellation or failed credentials
    (``alive``, re-checked at once on a revocation: ``credentials``) close it without one;
    ``frames``/``on_close``: hooks for an in-process notifier that queues ready messages;
    ``retry_ms``: the SSE reconnection time the stream opens with."""

    first: list[bytes]
    groups: list[str]
    render: Callable[[dict[str, Any]], bytes | None]
    closing: bytes | None = None
    modern: bool = False
    alive: Callable[[], Awaitable[bool]] | None = None  # checked on keep-alive ticks
    frames: asyncio.Queue[bytes | None] | None = None  # ready messages from an in-process notifier
    on_close: Callable[[], None] | None = None           # runs once the stream has ended
    credentials: tuple[Any, str] | None = None           # (client id, OAuth token checksum): a change re-checks now
    retry_ms: int | None = None                          # SSE retry: sent first (2025-11-25 GET streams)


async def _close_streams(group: str) -> None:
    """Ask every open stream in ``group`` (in any process sharing the channel layer) to end."""
    try:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is not None:
            await layer.group_send(group, {"type": "mcp.close"})
    except Exception:  # streams also notice at their next keep-alive check
        from ..notify.layer_health import health

        health.failure(logger, "could not signal stream close to %s", group)


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


def _error_bytes(exc: BaseException, rid: Any, *, modern: bool) -> bytes:
    return jsonrpc.encode_error(rid, as_mcp_error(exc, modern=modern))


def _encode_result(rid: Any, result: Any, ctx: RequestContext) -> bytes:
    if ctx.modern and isinstance(result, dict) and "resultType" not in result:
        result = ctx.complete(result)  # every 2026-07-28 result carries resultType
    return jsonrpc.encode_result(rid, result)


class Dispatcher:
    """Stateless apart from the session store; one instance serves every transport."""

    def __init__(self) -> None:
        self.legacy_methods = LEGACY_METHODS
        self.modern_methods = MODERN_METHODS

    # ------------------------------------------------------------------ entry points

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
            identity = dataclasses.replace(identity, peer=peer_key(client))
        return identity

    async def post(self, headers: dict[str, str], body: bytes, identity: Identity, *,
                   duplicated_header: str | None = None) -> Reply:
        """One HTTP POST body. Never raises for protocol problems: returns an error Reply.

        Anonymous callers' streams are budgeted, and may be cancelled, per network
        (``identity.peer``, set by ``authenticate``)."""
        try:
            obj = jsonrpc.parse_body(body)
        except errors.McpError as exc:
            return error_reply(exc, None, modern=self._looks_modern(headers))
        version_header = headers.get(H_PROTOCOL_VERSION)
        if isinstance(obj, list):
            return await self._legacy_batch(obj, headers, identity)
        if version_header is None or version_header in LEGACY_VERSIONS:
            return await self._legacy_single(obj, headers, identity)
        if headers.get(H_SESSION_ID) is not None and version_header not in MODERN_VERSIONS \
                and not self._has_modern_meta(obj):
            # A legacy session client sending a version header we don't know: legacy 400.
            return error_reply(errors.InvalidRequest(
                f"Bad Request: unsupported MCP-Protocol-Version {version_header!r}",
                data={"supported": list(LEGACY_VERSIONS)}), jsonrpc.request_id_of(obj))
        return await self._modern(obj, headers, identity, duplicated_header, owner=stream_owner(identity))

    async def open_stream(self, headers: dict[str, str], identity: Identity) -> Reply:
        """HTTP GET: the legacy session's standalone SSE stream; 405 on the modern wire.

        Its events carry change-log positions as SSE ids; a ``Last-Event-ID`` replays what
        changed since then for this session (see :mod:`mcp_endpoint.notify.replay`)."""
        version_header = headers.get(H_PROTOCOL_VERSION)
        sid = headers.get(H_SESSION_ID)
        if sid is None:
            if version_header is not None and version_header in LEGACY_VERSIONS:
                return error_reply(errors.SessionRequired())
            return self._method_not_allowed()
        if version_header is not None and version_header not in LEGACY_VERSIONS:
            return self._method_not_allowed()
        try:
            session = await self._session(sid, identity, fresh=True)  # subscriptions may come from another worker
        except errors.McpError as exc:
            return error_reply(exc)
        try:
            stream = await self._session_stream(session, identity, owner=stream_owner(identity),
                                                last_event_id=headers.get("last-event-id"))
        except StreamLimitReached as exc:
            return error_reply(errors.TooManyStreams(str(exc)))
        except Exception as exc:  # noqa: BLE001 - the catalog's first build or the replay hit an outage (503)
            return error_reply(exc)
        return Reply(200, stream=stream, session_id=session.session_id)

    async def end_session(self, headers: dict[str, str], identity: Identity) -> Reply:
        """HTTP DELETE: end a legacy session (404 when unknown or already ended)."""
        version_header = headers.get(H_PROTOCOL_VERSION)
        sid = headers.get(H_SESSION_ID)
        if version_header is not None and version_header not in LEGACY_VERSIONS and sid is None:
            return self._method_not_allowed()
        if sid is None:
            return error_reply(errors.SessionRequired())
        try:
            session = await self._session(sid, identity)
        except errors.McpError as exc:
            return error_reply(exc)
        if not await session_store.end(session.session_id):
            return error_reply(errors.SessionNotFound())
        await _close_streams(session_group(session.session_id))
        return Reply(200)

    async def handle_stdio(self, line: bytes, state: StdioState) -> bytes | None:
        """One stdio line (message or 2025-03-26 batch) -> reply line or None."""
        try:
            obj = jsonrpc.parse_body(line)
        except errors.McpError as exc:
            return _error_bytes(exc, None, modern=False)
        if isinstance(obj, list):
            if state.version != "2025-03-26" or not obj:
                return _error_bytes(errors.InvalidRequest("Batches are only allowed at 2025-03-26"), None,
                                    modern=False)
            out = await run_batch(obj, lambda o: self._stdio_one(o, state))
            if isinstance(out, bytes):
                return out
            return jsonrpc.encode_batch(out) if out else None
        return await self._stdio_one(obj, state)

    # ------------------------------------------------------------------ legacy wire

    @staticmethod
    def _looks_modern(headers: dict[str, str]) -> bool:
        v = headers.get(H_PROTOCOL_VERSION)
        return v is not None and v not in LEGACY_VERSIONS

    @staticmethod
    def _has_modern_meta(obj: Any) -> bool:
        params = obj.get("params") if isinstance(obj, dict) else None
        meta = params.get("_meta") if isinstance(params, dict) else None
        return isinstance(meta, dict) and META_PROTOCOL_VERSION in meta

    @staticmethod
    def _method_not_allowed() -> Reply:
        """GET/DELETE without a legacy session: the modern wire is POST only."""
        reply = error_reply(errors.MethodNotAllowed("Method Not Allowed: use POST (GET and DELETE need a "
                                                    "2025-xx Mcp-Session-Id)"))
        reply.allow = "POST"
        return reply

    async def _session(self, sid: str, identity: Identity, *, fresh: bool = False) -> Session:
        try:
            session = await session_store.get(sid, fresh=fresh)
        except Exception as exc:  # the database is down: a JSON-RPC error (503), never a crash
            raise as_mcp_error(exc, modern=False) from exc
        if session is None or session.client_id != identity.client_id:
            raise errors.SessionNotFound()
        return session

    def _legacy_ctx(self, session: Session, identity: Identity) -> RequestContext:
        return RequestContext(version=session.protocol_version, modern=False, identity=identity,
                              server_info=server_info(session.protocol_version),
                              ttl_ms=mcp_settings.CACHE_TTL_MS, session=session)

    async def _legacy_single(self, obj: Any, headers: dict[str, str], identity: Identity) -> Reply:
        rid = jsonrpc.request_id_of(obj)
        try:
            msg = jsonrpc.classify(obj)
        except errors.McpError as exc:
            return error_reply(exc, rid)
        if msg.method == "initialize":
            if not msg.is_request:
                return Reply(202)
            return await self._initialize(msg, identity)
        sid = headers.get(H_SESSION_ID)
        try:
            if sid is None:
                raise errors.SessionRequired()
            session = await self._session(sid, identity)
        except errors.McpError as exc:
            return error_reply(exc, rid)
        if not msg.is_request:
            return Reply(202)
        ctx = self._legacy_ctx(session, identity)
        body, err = await self._call(self.legacy_methods, msg, ctx)
        return Reply(http_status(err, modern=False), body)

    async def _legacy_batch(self, items: list[Any], headers: dict[str, str], identity: Identity) -> Reply:
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
            session = await self._session(sid, identity)
        except errors.McpError as exc:
            return error_reply(exc)
        if session.protocol_version != DEFAULT_LEGACY:
            return error_reply(errors.InvalidRequest(
                f"Batches are only allowed at 2025-03-26 (session negotiated {session.protocol_version})"))
        ctx = self._legacy_ctx(session, identity)
        statuses: set[int] = set()

        async def one(obj: Any) -> bytes | None:
            try:
                msg = jsonrpc.classify(obj)
            except errors.McpError as exc:
                statuses.add(200)
                return _error_bytes(exc, jsonrpc.request_id_of(obj), modern=False)
            if not msg.is_request:
                return None
            body, err = await self._call(self.legacy_methods, msg, ctx)
            statuses.add(http_status(err, modern=False))
            return body

        out = await run_batch(items, one)
        if isinstance(out, bytes):
            return Reply(400, out)
        if not out:
            return Reply(202)
        # 503 only when the outage failed every request of the batch: one answer per batch.
        return Reply(503 if statuses == {503} else 200, jsonrpc.encode_batch(out))

    async def _initialize(self, msg: Message, identity: Identity) -> Reply:
        params = msg.params
        version = negotiate_legacy(params.get("protocolVersion"))
        client_info = params.get("clientInfo") if isinstance(params.get("clientInfo"), dict) else {}
        caps = params.get("capabilities") if isinstance(params.get("capabilities"), dict) else {}
        try:
            session = await session_store.create(protocol_version=version, client_info=client_info,
                                                 client_capabilities=caps, client_id=identity.client_id,
                                                 peer=identity.peer)
        except Exception as exc:  # noqa: BLE001 - database down etc.: internal error, logged
            return error_reply(exc, msg.id)
        return Reply(200, jsonrpc.encode_result(msg.id, self.initialize_result(version)),
                     session_id=session.session_id)

    @staticmethod
    def initialize_result(version: str) -> dict[str, Any]:
        result: dict[str, Any] = {
            "protocolVersion": version,
            "capabilities": capabilities(modern=False, version=version),
            "serverInfo": server_info(version),
        }
        if mcp_settings.INSTRUCTIONS:
            result["instructions"] = mcp_settings.INSTRUCTIONS
        return result

    async def _call(self, table: dict[str, Handler], msg: Message,
                    ctx: RequestContext) -> tuple[bytes, errors.McpError | None]:
        """Run one request's handler -> (serialised response, the JSON-RPC error or None)."""
        handler = table.get(msg.method or "")
        try:
            if handler is None:
                raise errors.MethodNotFound(f"Method not found: {msg.method}")
            result = await handler(ctx, msg.params)
        except Exception as exc:  # noqa: BLE001 - mapped to a JSON-RPC error in one place
            err = as_mcp_error(exc, modern=ctx.modern)
            return jsonrpc.encode_error(msg.id, err), err
        return _encode_result(msg.id, result, ctx), None

    async def _session_stream(self, session: Session, identity: Identity, *, owner: Any = None,
                              last_event_id: str | None = None) -> Stream:
        """Legacy GET stream: list_changed for what the session's credentials see, and
        resources/updated for its subscribed URIs; the hub decides, this stream carries.

        Registered before the replay is read, so a change committed meanwhile is heard live
        (perhaps twice, never not at all)."""
        listener = Listener(identity.viewer, render=_plain_notification, uris=set(session.subscriptions),
                            session_id=session.session_id, owner=owner, event_ids=True)
        await notification_hub.register(listener)
        try:
            first = await replay.opening_frames(listener, last_event_id, session.protocol_version,
                                                notification_hub.position)
        except BaseException:
            notification_hub.unregister(listener)
            raise

        def render(event: dict[str, Any]) -> bytes | None:
            if event.get("type") == "mcp.subscriptions":  # (un)subscribed through another process
                listener.uris = set(event.get("uris") or ())
                return None
            method = event.get("method")
            params = event.get("params") or {}
            if method in ("notifications/prompts/list_changed", "notifications/resources/list_changed"):
                return jsonrpc.encode_notification(method)
            if method == "notifications/resources/updated" and params.get("uri") in listener.uris:
                return jsonrpc.encode_notification(method, {"uri": params["uri"]})
            return None

        async def alive() -> bool:
            # A DELETE served by another process, or a revoked client, ends this stream within a
            # keep-alive interval.
            if not await still_authorised(identity):
                return False
            return await session_store.get(session.session_id) is not None

        # The SDKs reconnect a GET stream twice, `retry` apart, then never again: a retry long
        # enough for a restart keeps them listening across one (STREAM_RETRY_MS).
        retry_ms = int(mcp_settings.STREAM_RETRY_MS) if session.protocol_version in replay.PRIMING_VERSIONS else None
        return Stream(first=first, groups=[session_group(session.session_id)], render=render, alive=alive,
                      frames=listener.queue, on_close=lambda: notification_hub.unregister(listener),
                      credentials=(identity.client_id, identity.oauth_token), retry_ms=retry_ms)

    # ------------------------------------------------------------------ modern wire

    async def _modern(self, obj: Any, headers: dict[str, str], identity: Identity,
                      duplicated_header: str | None, *, owner: Any = None) -> Reply:
        rid = jsonrpc.request_id_of(obj)
        try:
            if not isinstance(obj, dict):
                raise errors.InvalidRequest("Body must be a single JSON-RPC request or notification object")
            msg = jsonrpc.classify(obj)
            if msg.kind == "response":
                return Reply(202, modern=True)  # nothing to answer; accepted and dropped
            if msg.kind == "notification":
                if headers.get(H_PROTOCOL_VERSION) not in MODERN_VERSIONS:
                    raise self._unsupported(headers.get(H_PROTOCOL_VERSION))
                if msg.method == "notifications/cancelled":
                    # Closing the stream is the cancellation on HTTP; a client that sends this
                    # anyway gets its own listen stream (never anyone else's) ended too.
                    request_id = msg.params.get("requestId")
                    if isinstance(request_id, (str, int)) and not isinstance(request_id, bool):
                        notification_hub.cancel(owner, request_id)
                return Reply(202, modern=True)
            ctx = self._modern_ctx(msg, headers, identity, duplicated_header)
        except Exception as exc:  # noqa: BLE001
            return error_reply(exc, rid, modern=True)
        if msg.method == "server/discover":
            return Reply(200, jsonrpc.encode_result(msg.id, self.discover_result(ctx)), modern=True)
        if msg.method == "subscriptions/listen":
            return await self._listen(msg, ctx, owner)
        body, err = await self._call(self.modern_methods, msg, ctx)
        return Reply(http_status(err, modern=True), body, modern=True)

    def _modern_ctx(self, msg: Message, headers: dict[str, str], identity: Identity,
                    duplicated_header: str | None) -> RequestContext:
        """The 2026-07-28 validation ladder: ``_meta`` keys -> headers -> supported version."""
        meta = msg.params.get("_meta")
        if not isinstance(meta, dict):
            raise errors.InvalidParams(
                f"params._meta must carry {META_PROTOCOL_VERSION!r} and {META_CLIENT_CAPABILITIES!r}",
                http_status=400)
        missing = [k for k in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES) if k not in meta]
        if missing:
            raise errors.InvalidParams("params._meta is missing required key(s): " + ", ".join(missing),
                                       http_status=400)
        version = meta[META_PROTOCOL_VERSION]
        if duplicated_header:
            raise errors.HeaderMismatch(f"{duplicated_header} header appears more than once")
        if headers.get(H_PROTOCOL_VERSION) != version:
            raise errors.HeaderMismatch("MCP-Protocol-Version header does not match params._meta protocolVersion")
        check_modern_headers(headers, msg.method or "", msg.params, is_request=True)
        if not isinstance(version, str):
            raise errors.InvalidParams("params._meta protocolVersion must be a string", http_status=400)
        if version not in MODERN_VERSIONS:
            raise self._unsupported(version)
        caps = meta[META_CLIENT_CAPABILITIES]
        if not isinstance(caps, dict):
            raise errors.InvalidParams("params._meta clientCapabilities must be an object", http_status=400)
        if msg.method not in self.modern_methods and msg.method not in ("server/discover", "subscriptions/listen"):
            raise errors.MethodNotFound(f"Method not found: {msg.method}")
        return RequestContext(version=version, modern=True, identity=identity, server_info=server_info(version),
                              ttl_ms=mcp_settings.CACHE_TTL_MS, client_capabilities=caps)

    @staticmethod
    def _unsupported(requested: Any) -> errors.McpError:
        return errors.UnsupportedProtocolVersion(
            f"Unsupported protocol version: {requested!r}",
            data={"supported": list(SUPPORTED_VERSIONS), "requested": requested})

    def discover_result(self, ctx: RequestContext) -> dict[str, Any]:
        result: dict[str, Any] = {
            "supportedVersions": list(SUPPORTED_VERSIONS),
            "capabilities": capabilities(modern=True),
        }
        if mcp_settings.INSTRUCTIONS:
            result["instructions"] = mcp_settings.INSTRUCTIONS
        return ctx.complete(result, cacheable=True)

    async def _listen(self, msg: Message, ctx: RequestContext, owner: Any = None) -> Reply:
        """subscriptions/listen: acknowledge the honoured subset first, then only requested
        notifications, each tagged with the subscription id (the listen request's id).
        No SSE ids: 2026-07-28 has no stream resumption; a client re-reads on reconnect."""
        try:
            listener, ack, closing = listen_subscription(msg, ctx)
            listener.owner, listener.request_id = owner, msg.id
            await notification_hub.register(listener)
        except StreamLimitReached as exc:
            return error_reply(errors.TooManyStreams(str(exc)), msg.id, modern=True)
        except Exception as exc:  # noqa: BLE001 - bad filter; the catalog's first build hit an outage (503)
            return error_reply(exc, msg.id, modern=True)
        identity = ctx.identity

        async def alive() -> bool:  # re-checked every keep-alive tick, and at once when credentials change
            return await still_authorised(identity)

        stream = Stream(first=[ack], groups=[], render=lambda event: None, closing=closing, modern=True,
                        frames=listener.queue, on_close=lambda: notification_hub.unregister(listener),
                        alive=alive, credentials=(identity.client_id, identity.oauth_token))
        return Reply(200, stream=stream, modern=True)

    # ------------------------------------------------------------------ stdio

    async def _stdio_one(self, obj: Any, state: StdioState) -> bytes | None:
        rid = jsonrpc.request_id_of(obj)
        try:
            msg = jsonrpc.classify(obj)
        except errors.McpError as exc:
            return _error_bytes(exc, rid, modern=False)
        if msg.method == "notifications/cancelled":
            state.stop_listening(msg.params.get("requestId"))
            return None
        if not msg.is_request:
            return None
        meta = msg.params.get("_meta")
        modern = isinstance(meta, dict) and META_PROTOCOL_VERSION in meta
        if msg.method == "initialize" and not modern:
            state.version = negotiate_legacy(msg.params.get("protocolVersion"))
            state.session = Session("stdio", state.version, state.identity.client_id, persistent=False)
            await state.listen(Listener(state.identity.viewer, render=_plain_notification,
                                        uris=state.session.subscriptions), key="session")
            return jsonrpc.encode_result(msg.id, self.initialize_result(state.version))
        if modern or msg.method == "server/discover":
            try:
                if not isinstance(meta, dict) or META_CLIENT_CAPABILITIES not in meta \
                        or META_PROTOCOL_VERSION not in meta:
                    raise errors.InvalidParams("params._meta must carry protocolVersion and clientCapabilities")
                version = meta[META_PROTOCOL_VERSION]
                if version not in MODERN_VERSIONS:
                    raise self._unsupported(version)
                ctx = RequestContext(version=version, modern=True, identity=state.identity,
                                     server_info=server_info(version), ttl_ms=mcp_settings.CACHE_TTL_MS,
                                     client_capabilities=meta[META_CLIENT_CAPABILITIES])
            except Exception as exc:  # noqa: BLE001
                return _error_bytes(exc, msg.id, modern=True)
            if msg.method == "server/discover":
                return jsonrpc.encode_result(msg.id, self.discover_result(ctx))
            if msg.method == "subscriptions/listen":
                try:
                    listener, ack, closing = listen_subscription(msg, ctx)
                    await state.listen(listener, key=msg.id, closing=closing)
                except (errors.McpError, StreamLimitReached) as exc:
                    return _error_bytes(exc if isinstance(exc, errors.McpError) else errors.TooManyStreams(str(exc)),
                                        msg.id, modern=True)
                return ack
            body, _err = await self._call(self.modern_methods, msg, ctx)
            return body
        if state.session is None:
            state.session = Session("stdio", state.version, state.identity.client_id, persistent=False)
        ctx = self._legacy_ctx(state.session, state.identity)
        body, _err = await self._call(self.legacy_methods, msg, ctx)
        return body


def stream_owner(identity: Identity) -> tuple[str, Any]:
    """Whose stream budget (and cancellation scope) a stream belongs to: the client token, or
    for anonymous callers their network (``identity.peer``), so one cannot exhaust it for all."""
    if identity.client_id is not None:
        return ("client", identity.client_id)
    return ("peer", identity.peer)


def _plain_notification(method: str, params: dict[str, Any] | None) -> bytes:
    return jsonrpc.encode_notification(method, params)


LISTEN_FILTERS = {
    # filter key -> honoured? (tools never change at run time, so toolsListChanged is not)
    "promptsListChanged": True,
    "resourcesListChanged": True,
    "resourceSubscriptions": True,
    "toolsListChanged": False,
}


def listen_subscription(msg: Message, ctx: RequestContext) -> tuple[Listener, bytes, bytes]:
    """Validate a subscriptions/listen filter; return its listener, acknowledgement and closing result.

    Unknown filter keys are ignored and left out of the acknowledgement (which states exactly
    what is honoured); a malformed or oversized URI list is -32602.
    """
    wanted = msg.params.get("notifications")
    if wanted is not None and not isinstance(wanted, dict):
        raise errors.InvalidParams("params.notifications must be an object")
    wanted = wanted or {}
    honoured: dict[str, Any] = {}
    for key in ("promptsListChanged", "resourcesListChanged"):
        if wanted.get(key) is True:
            honoured[key] = True
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise errors.InvalidParams("notifications.resourceSubscriptions must be a list of URI strings")
        limit = int(mcp_settings.MAX_LISTEN_URIS)
        if len(uris) > limit:
            raise errors.InvalidParams(f"notifications.resourceSubscriptions may hold at most {limit} URIs",
                                       data={"limit": limit})
        honoured["resourceSubscriptions"] = list(dict.fromkeys(canonical_uri(u) for u in uris))
    sub_meta = {META_SUBSCRIPTION_ID: msg.id}

    def render(method: str, params: dict[str, Any] | None) -> bytes:
        return jsonrpc.encode_notification(method, {**(params or {}), "_meta": sub_meta})

    listener = Listener(ctx.identity.viewer, render=render, prompts=bool(honoured.get("promptsListChanged")),
                        resources=bool(honoured.get("resourcesListChanged")),
                        uris=set(honoured.get("resourceSubscriptions", ())))
    ack = jsonrpc.encode_notification("notifications/subscriptions/acknowledged",
                                      {"_meta": sub_meta, "notifications": honoured})
    closing = jsonrpc.encode_result(msg.id, {"resultType": "complete", "_meta": dict(sub_meta)})
    return listener, ack, closing


@dataclass
class StdioState:
    """One stdio connection: its credentials, implicit legacy session and open subscriptions.

    ``send`` writes one line to stdout; notifications for the legacy session and for each
    ``subscriptions/listen`` (demultiplexed by subscription id) go through it."""

    identity: Identity
    version: str = DEFAULT_LEGACY
    session: Session | None = None
    send: Callable[[bytes], None] | None = None
    forwarders: dict[Any, tuple[Listener, asyncio.Task]] = field(default_factory=dict)

    async def listen(self, listener: Listener, *, key: Any, closing: bytes | None = None) -> None:
        if self.send is None:
            return  # no output channel (tests driving the dispatcher directly)
        self.stop_listening(key)
        await notification_hub.register(listener)
        task = asyncio.get_running_loop().create_task(self._forward(listener, closing))
        self.forwarders[key] = (listener, task)

    async def _forward(self, listener: Listener, closing: bytes | None) -> None:
        while True:
            frame = await listener.queue.get()
            if frame is None or frame is DROP:  # overflow or shutdown: on stdio a listen ends with its result
                if closing is not None and self.send is not None:
                    self.send(closing)
                return
            if self.send is not None:
                self.send(frame)

    def stop_listening(self, key: Any) -> None:
        entry = self.forwarders.pop(key, None)
        if entry is not None:
            notification_hub.unregister(entry[0])
            entry[1].cancel()

    def close(self) -> None:
        for key in list(self.forwarders):
            self.stop_listening(key)


dispatcher = Dispatcher()


__all__ = [
    "MODERN",
    "Dispatcher",
    "RawJSON",
    "Reply",
    "StdioState",
    "Stream",
    "capabilities",
    "dispatcher",
    "server_info",
    "session_group",
]


def stdio_identity(client_name: str | None) -> Identity:
    """Credentials for stdio come from the environment (``--client``), never from messages."""
    return authenticate_stdio(client_name)
