"""ping and logging/setLevel: a legacy session's own methods."""

from __future__ import annotations

from typing import Any

from ..wire import errors
from ..wire.context import RequestContext
from ..wire.sessions import LOG_LEVELS
from ..wire.sessions import store as session_store


async def logging_set_level(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise errors.InvalidParams(f"params.level must be one of {', '.join(LOG_LEVELS)}",
                                   data={"level": level})
    await session_store.set_log_level(ctx.session, level)
    return {}


async def ping(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    return {}
