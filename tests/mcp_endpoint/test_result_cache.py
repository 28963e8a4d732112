"""The serialised-result cache stays bounded: one catalog generation, a byte budget, LRU order."""

from __future__ import annotations

import json

import pytest

from mcp_endpoint.dispatch.discovery import server_info
from mcp_endpoint.handlers import catalogs
from mcp_endpoint.handlers.identity import anonymous
from mcp_endpoint.handlers.lists import prompts_list, resources_list
from mcp_endpoint.handlers.resources import resources_read
from mcp_endpoint.handlers.result_cache import ENTRY_OVERHEAD_BYTES, ResultCache
from mcp_endpoint.wire.context import RequestContext
from registry import changes


def ctx(version="2025-11-25"):
    return RequestContext(version=version, modern=version == "2026-07-28", identity=anonymous(),
                          server_info=server_info(version), session=None)


@pytest.mark.django_db(transaction=True)
async def test_many_generations_leave_only_the_current_generations_results(registry_data):
    """Every publish moves the generation; results of older generations are never hit again."""
    per_generation = None
    for _ in range(40):
        changes.bump_generation()
        await prompts_list(ctx(), {})
        await resources_list(ctx(), {})
        await resources_read(ctx(), {"uri": "test://static-text"})
        if per_generation is None:
            per_generation = len(catalogs.results)
    assert per_generation == 3
    assert len(catalogs.results) == per_generation
    assert catalogs.results.generation == changes.generation()


@pytest.mark.django_db(transaction=True)
async def test_cached_results_stay_within_the_byte_budget(registry_data, many_prompts, settings):
    budget = 12 * 1024
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "RESULT_CACHE_BYTES": budget, "PAGE_SIZE": 10}
    cursor, pages = None, 0
    while True:
        page = await prompts_list(ctx(), {"cursor": cursor} if cursor else {})
        pages += 1
        assert catalogs.results.nbytes <= budget
        cursor = json.loads(page.data).get("nextCursor")
        if not cursor:
            break
    assert pages > 20
    assert 0 < len(catalogs.results) < pages  # older pages were evicted, the newest is kept
    last = await prompts_list(ctx(), {"cursor": None})
    assert await prompts_list(ctx(), {}) is last  # still a cache: a repeat is a hit


def _cache(max_bytes=10_000, max_entries=100):
    return ResultCache(lambda: max_bytes, lambda: max_entries)


def test_a_result_built_from_an_older_generation_is_not_stored():
    cache = _cache()
    assert cache.put("a", "new", generation=5, size=10)
    assert not cache.put("b", "late", generation=4, size=10)
    assert cache.get("a", 5) == "new" and cache.get("b", 4) is None and cache.get("b", 5) is None


def test_a_newer_generation_drops_every_older_entry():
    cache = _cache()
    for i in range(10):
        cache.put(i, f"v{i}", generation=1, size=100)
    cache.put("x", "fresh", generation=2, size=100)
    assert len(cache) == 1 and cache.nbytes == 100 + ENTRY_OVERHEAD_BYTES
    assert cache.get(0, 1) is None and cache.get("x", 2) == "fresh"


def test_eviction_is_least_recently_used_by_bytes():
    cost = 1000 + ENTRY_OVERHEAD_BYTES
    cache = _cache(max_bytes=3 * cost)
    for key in "abc":
        cache.put(key, key, generation=1, size=1000)
    cache.get("a", 1)  # a is now the most recently used
    cache.put("d", "d", generation=1, size=1000)
    assert cache.get("b", 1) is None
    assert [cache.get(k, 1) for k in "acd"] == ["a", "c", "d"]
    assert cache.nbytes == 3 * cost


def test_a_result_larger_than_the_budget_is_not_cached_and_evicts_nothing():
    cache = _cache(max_bytes=2000)
    cache.put("small", "s", generation=1, size=100)
    assert not cache.put("huge", "h", generation=1, size=5000)
    assert cache.get("small", 1) == "s" and len(cache) == 1


def test_replacing_a_key_does_not_count_it_twice():
    cache = _cache()
    cache.put("a", "one", generation=1, size=400)
    cache.put("a", "two", generation=1, size=600)
    assert len(cache) == 1 and cache.nbytes == 600 + ENTRY_OVERHEAD_BYTES and cache.get("a", 1) == "two"


def test_the_entry_count_limit_still_applies():
    cache = _cache(max_entries=3)
    for i in range(5):
        cache.put(i, i, generation=1, size=1)
    assert len(cache) == 3 and cache.get(0, 1) is None and cache.get(4, 1) == 4
