"""resources/read, and the canonical spelling of a URI that subscriptions are kept under."""

from __future__ import annotations

from typing import Any

from ..wire import errors, shapes
from ..wire.context import RequestContext
from ..wire.jsonrpc import RawJSON, dumps
from .catalogs import content_call, entry_catalog, get_catalog, personalisation, results
from .params import str_param
from .reads import lookup_uri, source

_CACHEABLE_READ_BYTES = 256 * 1024  # larger reads are served fresh rather than cached


async def resources_read(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any] | RawJSON:
    uri = str_param(params, "uri")
    catalog = await entry_catalog(ctx, "resource", uri)
    private, variant = personalisation(catalog, ctx.identity.viewer)
    cache_key = ("resources/read", ctx.identity.cache_key, ctx.version, ctx.cache_scope, private, variant,
                 uri)
    hit = results.get(cache_key, catalog.generation)
    if hit is not None:
        served, raw = hit
        source.record_fetch(served, ctx.identity.viewer)
        return raw
    served = await content_call(catalog.read_resource, ctx.identity.viewer, uri)
    if not served.result.get("contents"):
        raise errors.ResourceNotFound(uri)  # never answer with empty contents
    raw = RawJSON(dumps(ctx.complete(shapes.shape_contents(served.result, ctx.version), cacheable=True,
                                     private=private, ttl_ms=getattr(served, "ttl_ms", None),
                                     cache_scope=getattr(served, "cache_scope", None))))
    if len(raw.data) <= _CACHEABLE_READ_BYTES:
        results.put(cache_key, (served, raw), catalog.generation, len(raw.data))
    source.record_fetch(served, ctx.identity.viewer)
    return raw


def canonical_uri(uri: str) -> str:
    """The stored spelling of a client's URI, so subscriptions match what notifications name."""
    return lookup_uri(uri)


async def resource_exists(ctx: RequestContext, uri: str) -> None:
    catalog = await get_catalog(ctx.identity.label)
    if any(r.get("uri") == uri for r in catalog.resources(ctx.identity.viewer)):
        return
    # Templated URIs: UnknownResource if none matches.
    await content_call(catalog.read_resource, ctx.identity.viewer, uri)
