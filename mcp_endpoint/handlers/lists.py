"""prompts/list, resources/list, resources/templates/list: one page of what the viewer is served.

A page is serialised once and cached (handlers/catalogs.py): a warm list request is a cache hit
spliced into its envelope.
"""

from __future__ import annotations

from typing import Any

from ..settings import mcp_settings
from ..wire import errors, shapes
from ..wire.context import RequestContext
from ..wire.jsonrpc import RawJSON, dumps
from ..wire.pagination import cursor_key, paginate
from .catalogs import cursor_secret, get_catalog, page_catalog, personalisation, results


async def _list(ctx: RequestContext, params: dict[str, Any], *, method: str, field: str, key: str,
                sorted_by_key: bool) -> RawJSON:
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise errors.InvalidParams("params.cursor must be a string from an earlier nextCursor")
    viewer = ctx.identity.viewer
    if mcp_settings.PAGE_SIZE > 0:
        after = cursor_key(cursor_secret(), method, cursor) if sorted_by_key else None
        catalog = await page_catalog(ctx.identity.label, _KINDS[method], viewer, after)
    else:  # one page holds everything: nothing to gain from reading a part
        catalog = await get_catalog(ctx.identity.label)
    private, variant = personalisation(catalog, viewer, texts=False)
    cache_key = (method, ctx.identity.cache_key, ctx.version, ctx.cache_scope, private, variant, cursor,
                 mcp_settings.PAGE_SIZE)
    hit = results.get(cache_key, catalog.generation)
    if hit is not None:
        return hit
    items = getattr(catalog, field)(viewer)
    page, next_cursor = paginate(items, kind=method, key=key, cursor=cursor, page_size=mcp_settings.PAGE_SIZE,
                                 secret=cursor_secret(), sorted_by_key=sorted_by_key,
                                 partial=bool(getattr(catalog, "partial", False)) and sorted_by_key)
    result: dict[str, Any] = {_LIST_FIELDS[method]: shapes.shape_items(page, ctx.version)}
    if next_cursor:
        result["nextCursor"] = next_cursor
    raw = RawJSON(dumps(ctx.complete(result, cacheable=True, private=private)))
    results.put(cache_key, raw, catalog.generation, len(raw.data))
    return raw


_KINDS = {"prompts/list": "prompt", "resources/list": "resource", "resources/templates/list": "template"}
_LIST_FIELDS = {"prompts/list": "prompts", "resources/list": "resources",
                "resources/templates/list": "resourceTemplates"}


async def prompts_list(ctx: RequestContext, params: dict[str, Any]) -> RawJSON:
    return await _list(ctx, params, method="prompts/list", field="prompts", key="name", sorted_by_key=True)


async def resources_list(ctx: RequestContext, params: dict[str, Any]) -> RawJSON:
    return await _list(ctx, params, method="resources/list", field="resources", key="uri", sorted_by_key=True)


async def resource_templates_list(ctx: RequestContext, params: dict[str, Any]) -> RawJSON:
    return await _list(ctx, params, method="resources/templates/list", field="templates", key="uriTemplate",
                       sorted_by_key=False)
