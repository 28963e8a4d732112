"""The label's catalog for a request, and what is cached of the answers built from it.

Hot path: the catalog is in memory (no query, no thread hop). On a miss, a list page or a
get/read of one entry is answered from the database while the whole catalog is built in the
background (registry/serving/warmup.py, registry/serving/pages.py); first of all the hub is started, so
that a process answering requests hears of changes committed elsewhere even if it holds no
stream (else its cached catalogs would never go stale).

Serialised list pages and small reads are cached per (label, scope, revision, cursor, catalog
generation) in :data:`results`; list cursors are signed with :func:`cursor_secret`.
"""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from ..notify.hub import hub as notification_hub
from ..settings import mcp_settings, on_reload
from ..wire.context import RequestContext
from .reads import PATTERN_VALUE_MAX_LENGTH, ContentNotLoaded, awaiting_build, source
from .result_cache import ResultCache

results = ResultCache(lambda: mcp_settings.RESULT_CACHE_BYTES, lambda: mcp_settings.RESULT_CACHE_SIZE)
_secret_cache: list[bytes] = []


def reset_caches() -> None:
    results.clear()
    _secret_cache.clear()


on_reload(reset_caches)


def cursor_secret() -> bytes:
    if not _secret_cache:
        _secret_cache.append(hashlib.sha256(b"mcp_endpoint.cursor:" + settings.SECRET_KEY.encode()).digest())
    return _secret_cache[0]


async def get_catalog(label: str) -> Any:
    """The label's in-memory snapshot; on a miss, wait for its build in the background (one
    per label, registry/serving/warmup.py), which concurrent callers share."""
    catalog = source.cached_catalog(label)
    if catalog is not None:
        return catalog
    await _start_hub()
    with awaiting_build():  # the build need not give way to a request that waits for it
        return await asyncio.shield(asyncio.wrap_future(source.warm_catalog(label)))


async def _start_hub() -> None:
    # A process that serves requests must hear of changes committed elsewhere even if it never
    # holds a stream, or its cached catalogs would never go stale: start the hub's catch-up.
    await notification_hub.start()


async def page_catalog(label: str, kind: str, viewer: Any, after: str | None) -> Any:
    """On a miss, a list page need not wait for the whole catalog: it is read from the database
    (registry/serving/pages.py), or from a run of the list read there before at this generation,
    then the catalog's build starts in the background."""
    catalog = source.cached_catalog(label)
    if catalog is not None:
        return catalog
    await _start_hub()
    count = mcp_settings.PAGE_SIZE + 1
    catalog = source.cached_page(label, kind, viewer, after, count)  # a run read before: no thread hop
    if catalog is None:
        catalog = await database_sync_to_async(source.page_catalog)(label, kind, viewer, after, count)
    if getattr(catalog, "partial", False):
        source.warm_catalog(label)
    return catalog


async def entry_catalog(ctx: RequestContext, kind: str, key: str) -> Any:
    """On a miss, a get or read of one entry need not wait for the whole catalog either, when
    that entry alone answers it (registry/serving/pages.py); the catalog's build starts then."""
    label = ctx.identity.label
    catalog = source.cached_catalog(label)
    if catalog is not None:
        return catalog
    await _start_hub()
    catalog = await database_sync_to_async(source.entry_catalog)(label, kind, key, ctx.identity.viewer)
    if catalog is None:
        return await get_catalog(label)
    if getattr(catalog, "partial", False):
        source.warm_catalog(label)
    return catalog


async def content_call(method: Any, *args: Any, off_loop: bool = False) -> Any:
    """Run a catalog read; content not in memory yet is loaded in a worker thread (one read).
    ``off_loop``: the whole call runs in a worker thread of its own (long argument checks), so
    other clients' requests on this event loop are not held up behind it."""
    if off_loop:
        return await database_sync_to_async(method, thread_sensitive=False)(*args)
    try:
        return method(*args)
    except ContentNotLoaded:
        return await database_sync_to_async(method)(*args)


def long_arguments(arguments: dict[str, Any]) -> bool:
    """Whether checking and rendering these values may take long enough to stall the event loop:
    any value past the length a patterned argument accepts by default."""
    return sum(len(value) for value in arguments.values() if isinstance(value, str)) \
        > PATTERN_VALUE_MAX_LENGTH


def personalisation(catalog: Any, viewer: Any, *, texts: bool = True) -> tuple[bool, tuple]:
    """(results differ per client, cache-key variant). Percentage rollouts serve some clients a
    candidate version; their results are private and cached per variant. `texts=False` (lists):
    only the rollouts that can change a listing count (a snippet's changes texts alone)."""
    personalised = getattr(catalog, "personalised", None)
    if personalised is None or not personalised(viewer, texts=texts):
        return False, ()
    return True, tuple(catalog.variant(viewer, texts=texts))
