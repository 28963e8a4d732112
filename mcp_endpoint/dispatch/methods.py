"""The method tables of both wire generations, and running one request's handler.

``server/discover`` and ``subscriptions/listen`` (2026-07-28) are answered by the dispatch
itself (modern.py, stdio.py): they open a stream or describe the server rather than read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from ..handlers.completion import completion_complete
from ..handlers.lists import prompts_list, resource_templates_list, resources_list
from ..handlers.prompts import prompts_get
from ..handlers.resources import resources_read
from ..handlers.session import logging_set_level, ping
from ..handlers.subscriptions import resources_subscribe, resources_unsubscribe
from ..handlers.tools import tools_call, tools_list
from ..wire import errors, jsonrpc
from ..wire.context import RequestContext
from ..wire.jsonrpc import Message
from .replies import as_mcp_error, encode_result

Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[Any]]

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

LEGACY_METHODS: dict[str, Handler] = dict(
    _COMMON,
    **{
        "ping": ping,
        "logging/setLevel": logging_set_level,
        "resources/subscribe": resources_subscribe,
        "resources/unsubscribe": resources_unsubscribe,
    },
)
MODERN_METHODS: dict[str, Handler] = dict(_COMMON)
# 2026-07-28 methods answered by the dispatch itself, not through a table.
MODERN_SPECIAL = ("server/discover", "subscriptions/listen")


async def call(table: dict[str, Handler], msg: Message,
               ctx: RequestContext) -> tuple[bytes, errors.McpError | None]:
    """Run one request's handler -> (serialised response, the JSON-RPC error or None)."""
    handler = table.get(msg.method or "")
    try:
        if handler is None:
            raise errors.MethodNotFound(f"Method not found: {msg.method}")
        result = await handler(ctx, msg.params)
    except Exception as exc:  # mapped to a JSON-RPC error in one place
        err = as_mcp_error(exc, modern=ctx.modern)
        return jsonrpc.encode_error(msg.id, err), err
    return encode_result(msg.id, result, ctx), None
