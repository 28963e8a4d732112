"""Setting up the long-lived streams the transport carries: a legacy session's GET stream and a
2026-07-28 ``subscriptions/listen``.

Each registers a listener with the hub (which decides what the stream hears) and hands the
transport a :class:`Stream`: what to send first, where later frames come from, how to tell it is
still authorised, and how to let the listener go.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..handlers.identity import still_authorised
from ..handlers.subscriptions import listen_filter
from ..notify import replay
from ..notify.frames import Shape, subscription_tag
from ..notify.hub import hub as notification_hub
from ..notify.layer_health import health
from ..notify.listeners import Listener, session_group
from ..notify.mailbox import Mailbox
from ..settings import mcp_settings
from ..wire import jsonrpc
from ..wire.context import Identity, RequestContext
from ..wire.jsonrpc import Message
from ..wire.sessions import Session
from ..wire.sessions import store as session_store
from ..wire.versions import META_SUBSCRIPTION_ID

logger = logging.getLogger(__name__)


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

    first: Sequence[bytes | tuple[bytes, str]]  # (message, SSE event id) for a replayed one
    groups: list[str]
    render: Callable[[dict[str, Any]], bytes | None]
    closing: bytes | None = None
    modern: bool = False
    alive: Callable[[], Awaitable[bool]] | None = None  # checked on keep-alive ticks
    frames: asyncio.Queue[bytes | None] | Mailbox | None = None  # ready messages from an in-process notifier
    on_close: Callable[[], None] | None = None           # runs once the stream has ended
    credentials: tuple[Any, str] | None = None           # (client id, OAuth token checksum): re-checked
                                                         # at once when they change
    retry_ms: int | None = None                          # SSE retry, sent first (2025-11-25 GET streams)
    framed: bool = False                                 # `frames` items are whole SSE events (the
                                                         # hub's shared frames, notify/frames.py)


def stream_owner(identity: Identity) -> tuple[str, Any]:
    """Whose stream budget (and cancellation scope) a stream belongs to: the client token, or
    for anonymous callers their network (``identity.peer``), so one cannot exhaust it for all."""
    if identity.client_id is not None:
        return ("client", identity.client_id)
    return ("peer", identity.peer)


def plain_notification(method: str, params: dict[str, Any] | None) -> bytes:
    return jsonrpc.encode_notification(method, params)


# The shapes of this module's streams' frames, shared by all their listeners (notify/frames.py).
GET_STREAM = Shape(sse=True, event_ids=True)  # 2025-11-25 GET: SSE events with the position as id
LISTEN_STREAM = Shape(sse=True, tagged=True)  # 2026-07-28 listen over HTTP: SSE, subscription id
LISTEN_LINES = Shape(tagged=True)  # 2026-07-28 listen over stdio: JSON lines, subscription id
PLAIN_LINES = Shape()  # a legacy session over stdio: JSON lines


async def close_streams(group: str) -> None:
    """Ask every open stream in ``group`` (in any process sharing the channel layer) to end."""
    try:
        from channels.layers import get_channel_layer

        layer = get_channel_layer()
        if layer is not None:
            await layer.group_send(group, {"type": "mcp.close"})
    except Exception:  # streams also notice at their next keep-alive check
        health.failure(logger, "could not signal stream close to %s", group)


async def session_stream(session: Session, identity: Identity, *, owner: Any = None,
                         last_event_id: str | None = None) -> Stream:
    """Legacy GET stream: list_changed for what the session's credentials see, and
    resources/updated for its subscribed URIs; the hub decides, this stream carries.

    Registered before the replay is read, so a change committed meanwhile is heard live
    (perhaps twice, never not at all)."""
    listener = Listener(identity.viewer, render=plain_notification, uris=set(session.subscriptions),
                        session_id=session.session_id, owner=owner, event_ids=True, shape=GET_STREAM)
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
    primed = session.protocol_version in replay.PRIMING_VERSIONS
    retry_ms = int(mcp_settings.STREAM_RETRY_MS) if primed else None
    return Stream(first=first, groups=[session_group(session.session_id)], render=render, alive=alive,
                  frames=listener.queue, on_close=lambda: notification_hub.unregister(listener),
                  credentials=(identity.client_id, identity.oauth_token), retry_ms=retry_ms, framed=True)


async def listen_stream(msg: Message, ctx: RequestContext, owner: Any = None) -> Stream:
    """subscriptions/listen: acknowledge the honoured subset first, then only requested
    notifications, each tagged with the subscription id (the listen request's id).
    No SSE ids: 2026-07-28 has no stream resumption; a client re-reads on reconnect.

    Raises for a bad filter, past the stream limits, or when the catalog's first build fails."""
    listener, ack, closing = listen_subscription(msg, ctx, sse=True)
    listener.owner, listener.request_id = owner, msg.id
    await notification_hub.register(listener)
    identity = ctx.identity

    async def alive() -> bool:  # re-checked every keep-alive tick, and at once when credentials change
        return await still_authorised(identity)

    return Stream(first=[ack], groups=[], render=lambda event: None, closing=closing, modern=True,
                  frames=listener.queue, on_close=lambda: notification_hub.unregister(listener),
                  alive=alive, credentials=(identity.client_id, identity.oauth_token), framed=True)


def listen_subscription(msg: Message, ctx: RequestContext, *, sse: bool = False) -> tuple[Listener, bytes, bytes]:
    """A subscriptions/listen request's listener, acknowledgement and closing result (the filter
    is validated by handlers/subscriptions.py); `sse`: its frames are whole SSE events (HTTP),
    else JSON lines (stdio)."""
    honoured = listen_filter(msg.params)
    sub_meta = {META_SUBSCRIPTION_ID: msg.id}

    def render(method: str, params: dict[str, Any] | None) -> bytes:
        return jsonrpc.encode_notification(method, {**(params or {}), "_meta": sub_meta})

    listener = Listener(ctx.identity.viewer, render=render, prompts=bool(honoured.get("promptsListChanged")),
                        resources=bool(honoured.get("resourcesListChanged")),
                        uris=set(honoured.get("resourceSubscriptions", ())),
                        shape=LISTEN_STREAM if sse else LISTEN_LINES, tag=subscription_tag(msg.id))
    ack = jsonrpc.encode_notification("notifications/subscriptions/acknowledged",
                                      {"_meta": sub_meta, "notifications": honoured})
    closing = jsonrpc.encode_result(msg.id, {"resultType": "complete", "_meta": dict(sub_meta)})
    return listener, ack, closing
