"""JSON-RPC batches, bounded in length and in the size of their answer (HTTP and stdio alike)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

from ..settings import mcp_settings
from . import errors, jsonrpc


async def run_batch(items: list[Any], run_one: Callable[[Any], Awaitable[bytes | None]]) -> list[bytes] | bytes:
    """A 2025-03-26 batch (the only revision with batches: 2025-06-18 removed them), bounded:
    at most MAX_BATCH_LENGTH messages (else one -32600 error for the whole batch, nothing run),
    and responses of at most MAX_BATCH_RESPONSE_BYTES together. Once the responses pass that, the
    request that passed it and every later one get a -32600 error saying to send them on their
    own (later ones are not run), so a 1 MB batch of reads cannot make a 43 MB reply. Other
    requests on this event loop get a turn between the batch's messages. Used by HTTP and stdio."""
    limit = mcp_settings.MAX_BATCH_LENGTH
    if len(items) > limit:
        return jsonrpc.encode_error(None, errors.InvalidRequest(
            f"Invalid request: a batch may hold at most {limit} messages (got {len(items)}); send fewer at a time"))
    budget = mcp_settings.MAX_BATCH_RESPONSE_BYTES
    out: list[bytes] = []
    used = 0
    for index, obj in enumerate(items):
        if index:
            await asyncio.sleep(0)
        if used > budget:
            reply: bytes | None = _batch_overflow(obj, budget) if jsonrpc.request_id_of(obj) is not None else None
        else:
            reply = await run_one(obj)
            if reply is not None and out and used + len(reply) > budget:
                reply = _batch_overflow(obj, budget)
                used = budget + 1
        if reply is not None:
            used += len(reply)
            out.append(reply)
    return out


def _batch_overflow(obj: Any, budget: int) -> bytes:
    return jsonrpc.encode_error(jsonrpc.request_id_of(obj), errors.InvalidRequest(
        f"Invalid request: the batch's responses passed {budget:,} bytes; send this request on its own"))
