"""The one bounded content cache: byte budget, eviction, large entries, sharing across labels."""

from __future__ import annotations

import pytest

from registry.serving import catalogs
from registry.serving.viewer import Viewer
from registry.storage import cache as content_cache
from registry.storage.cache import ENTRY_OVERHEAD_BYTES, ContentCache
from tests.factories import make_resource, release


def test_least_recently_used_entries_are_evicted_to_stay_within_the_budget():
    budget = 8 * (100 + ENTRY_OVERHEAD_BYTES)  # eight entries of 100 bytes
    cache = ContentCache(lambda: budget)
    for key in "abcd":
        assert cache.put(key, key * 100, 100)
    cache.get("a")  # a is now the most recent
    for key in "efghi":
        cache.put(key, key * 100, 100)
    assert cache.used <= budget
    assert "a" in cache and "b" not in cache and "c" in cache  # b was the least recently used


def test_tiny_entries_are_bounded_in_number_by_their_overhead():
    """Each publish of a short resource is read under a new content hash: however small the
    texts, the entries kept stay within budget / ENTRY_OVERHEAD_BYTES."""
    budget = 64 * 1024
    cache = ContentCache(lambda: budget)
    for n in range(5000):
        cache.put(("bytes", f"{n:064x}", "utf-8"), f"# doc v{n}", 10 + 64)
    assert cache.stats()["entries"] <= budget // ENTRY_OVERHEAD_BYTES
    assert cache.used <= budget


def test_an_entry_over_an_eighth_of_the_budget_is_served_uncached():
    cache = ContentCache(lambda: 800)
    cache.put("small", "s", 50)
    assert cache.put("large", "x" * 101, 101) is False
    assert "large" not in cache and "small" in cache and cache.stats()["uncached"] == 1
    assert cache.get_or_load("large", lambda: ("x" * 101, 101)) == "x" * 101


@pytest.mark.django_db
def test_labels_serving_the_same_version_share_one_cached_copy(django_assert_num_queries):
    resource = make_resource("docs://shared", text="shared text")
    release(resource, labels=("production", "staging"))
    production = catalogs.load_catalog("production")
    staging = catalogs.load_catalog("staging")
    content_cache.cache.clear()
    assert production.read_resource(Viewer(), "docs://shared").result["contents"][0]["text"] == "shared text"
    entries = content_cache.cache.stats()["entries"]
    with django_assert_num_queries(0):
        served = staging.read_resource(Viewer(label="staging"), "docs://shared")
    assert served.result["contents"][0]["text"] == "shared text"
    assert content_cache.cache.stats()["entries"] == entries


@pytest.mark.django_db
def test_a_hot_prompt_costs_no_query_and_a_cold_one_one(django_assert_num_queries):
    from tests.factories import make_prompt

    release(make_prompt("hot", arguments=[], messages=[{"kind": "text", "text": "Hello"}]))
    loaded = catalogs.load_catalog("production")
    with django_assert_num_queries(1):
        loaded.get_prompt(Viewer(), "hot", {})
    with django_assert_num_queries(0):
        assert loaded.get_prompt(Viewer(), "hot", {}).result["messages"][0]["content"]["text"] == "Hello"


@pytest.mark.django_db
def test_the_catalog_holds_no_document_bytes(settings):
    release(make_resource("docs://big", text="x" * 50_000))
    loaded = catalogs.load_catalog("production")
    item = loaded.resource_items["docs://big"]
    assert "text" not in item.ref and item.listing["size"] == 50_000
    assert content_cache.cache.stats()["bytes"] == 0


@pytest.mark.django_db
def test_the_budget_setting_bounds_what_reads_keep(settings):
    settings.REGISTRY = {**settings.REGISTRY, "CONTENT_CACHE_BYTES": 80_000}
    for i in range(10):
        release(make_resource(f"docs://doc-{i}", text=f"{i}" * 9_000))
    loaded = catalogs.load_catalog("production")
    for i in range(10):
        assert loaded.read_resource(Viewer(), f"docs://doc-{i}").result["contents"][0]["text"] == f"{i}" * 9_000
    stats = content_cache.cache.stats()
    assert stats["bytes"] <= 80_000 and stats["entries"] < 10


@pytest.mark.django_db
def test_building_a_catalog_reads_the_listings_and_never_a_snapshot():
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.factories import make_prompt, make_template

    release(make_prompt("p", arguments=[], messages=[{"kind": "text", "text": "a long body " * 100}]))
    release(make_resource("docs://r", text="document"))
    release(make_template("items://{id}", body="Item {{ id }}"))
    with CaptureQueriesContext(connection) as queries:
        built = catalogs.load_catalog("production")
    assert sorted(built.prompt_items) == ["p"] and sorted(built.resource_items) == ["docs://r"]
    assert queries.captured_queries
    assert not any('"snapshot"' in q["sql"] for q in queries.captured_queries)
