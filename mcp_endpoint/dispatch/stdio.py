"""One stdio connection, both wire generations: a line whose params carry the 2026-07-28 ``_meta``
is served statelessly, everything else in one implicit legacy session.

Credentials come from the environment (``--client``), never from messages. Notifications of the
legacy session and of each ``subscriptions/listen`` (demultiplexed by subscription id) are written
between replies through :attr:`StdioState.send`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..handlers.identity import authenticate_stdio
from ..handlers.reads import serving
from ..notify.hub import hub as notification_hub
from ..notify.listeners import DROP, Listener, StreamLimitReached
from ..wire import errors, jsonrpc
from ..wire.batches import run_batch
from ..wire.context import Identity
from ..wire.sessions import Session
from ..wire.versions import (
    DEFAULT_LEGACY,
    META_PROTOCOL_VERSION,
    negotiate_legacy,
)
from . import legacy
from .discovery import discover_result, initialize_result
from .ladder import modern_context
from .methods import LEGACY_METHODS, MODERN_METHODS, call
from .replies import error_bytes
from .streams import PLAIN_LINES, listen_subscription, plain_notification


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


def stdio_identity(client_name: str | None) -> Identity:
    """Credentials for stdio come from the environment (``--client``), never from messages."""
    return authenticate_stdio(client_name)


async def handle_line(line: bytes, state: StdioState) -> bytes | None:
    """One stdio line (message or 2025-03-26 batch) -> reply line or None. Marked as served
    meanwhile, so a catalog build running beside it gives way (registry/serving/yielding.py)."""
    with serving():
        return await _handle_line(line, state)


async def _handle_line(line: bytes, state: StdioState) -> bytes | None:
    try:
        obj = jsonrpc.parse_body(line)
    except errors.McpError as exc:
        return error_bytes(exc, None, modern=False)
    if isinstance(obj, list):
        if state.version != "2025-03-26" or not obj:
            return error_bytes(errors.InvalidRequest("Batches are only allowed at 2025-03-26"), None,
                               modern=False)
        out = await run_batch(obj, lambda o: _one(o, state))
        if isinstance(out, bytes):
            return out
        return jsonrpc.encode_batch(out) if out else None
    return await _one(obj, state)


async def _one(obj: Any, state: StdioState) -> bytes | None:
    rid = jsonrpc.request_id_of(obj)
    try:
        msg = jsonrpc.classify(obj)
    except errors.McpError as exc:
        return error_bytes(exc, rid, modern=False)
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
        await state.listen(Listener(state.identity.viewer, render=plain_notification, shape=PLAIN_LINES,
                                    uris=state.session.subscriptions), key="session")
        return jsonrpc.encode_result(msg.id, initialize_result(state.version))
    if modern or msg.method == "server/discover":
        try:
            ctx = modern_context(msg, state.identity)  # the ladder HTTP climbs, less its header rung
        except Exception as exc:
            return error_bytes(exc, msg.id, modern=True)
        if msg.method == "server/discover":
            return jsonrpc.encode_result(msg.id, discover_result(ctx))
        if msg.method == "subscriptions/listen":
            try:
                listener, ack, closing = listen_subscription(msg, ctx)
                await state.listen(listener, key=msg.id, closing=closing)
            except (errors.McpError, StreamLimitReached) as exc:
                err = exc if isinstance(exc, errors.McpError) else errors.TooManyStreams(str(exc))
                return error_bytes(err, msg.id, modern=True)
            return ack
        body, _err = await call(MODERN_METHODS, msg, ctx)
        return body
    if state.session is None:
        state.session = Session("stdio", state.version, state.identity.client_id, persistent=False)
    body, _err = await call(LEGACY_METHODS, msg, legacy.context(state.session, state.identity))
    return body
