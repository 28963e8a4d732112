"""completion/complete: suggestions for a prompt argument or a resource template variable."""

from __future__ import annotations

from typing import Any

from ..wire import errors
from ..wire.context import RequestContext
from .catalogs import get_catalog
from .params import str_param, string_map

MAX_COMPLETION_VALUES = 100


async def completion_complete(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    ref = params.get("ref")
    if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource"):
        raise errors.InvalidParams("params.ref must be a ref/prompt or ref/resource reference")
    str_param(ref, "name" if ref["type"] == "ref/prompt" else "uri")
    argument = params.get("argument")
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str) \
            or not isinstance(argument.get("value", ""), str):
        raise errors.InvalidParams("params.argument must be {name: string, value: string}")
    context = params.get("context") or {}
    if not isinstance(context, dict):
        raise errors.InvalidParams("params.context must be an object")
    known = string_map(context.get("arguments"), "params.context.arguments")
    catalog = await get_catalog(ctx.identity.label)
    found = catalog.complete(ctx.identity.viewer, ref, argument["name"], argument.get("value", ""), known)
    values = list(found.get("values") or [])
    completion: dict[str, Any] = {"values": values[:MAX_COMPLETION_VALUES]}
    total = found.get("total")
    if isinstance(total, int):
        completion["total"] = max(total, len(values))
    has_more = bool(found.get("hasMore")) or len(values) > MAX_COMPLETION_VALUES
    if has_more or "hasMore" in found:
        completion["hasMore"] = has_more
    return ctx.complete({"completion": completion})
