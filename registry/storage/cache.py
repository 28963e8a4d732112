"""One bounded per-process cache of served content, measured in bytes.

The catalog (registry/serving/catalog.py) keeps only metadata; what `prompts/get` and
`resources/read` return is loaded on demand and kept here: compiled prompt versions and
template bodies keyed by version row, resource text and base64 blobs keyed by content hash.
Labels that serve the same version, and resources with the same bytes, share one entry.

The budget is `REGISTRY["CONTENT_CACHE_BYTES"]` (64 MiB by default); least recently used
entries go first. An entry larger than 1/`ENTRY_FRACTION` of the budget is served without
being cached, so one large document never evicts everything else. Sizes are estimates of
the payload (string lengths) plus a fixed cost per entry (ENTRY_OVERHEAD_BYTES: the key, the
LRU's node, the value's wrapper). Without that cost a budget of payload bytes bounded nothing
for small documents: every publish of a short resource is read under a new content hash, and
64 MiB of 30-byte texts is some 700,000 entries, each costing Python about 380 bytes
(key tuple, 64-character hash, text, LRU node; measured with tracemalloc).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any

from registry.conf import registry_settings

ENTRY_FRACTION = 8
# Rough cost of one entry beyond its payload estimate (as in mcp_endpoint/handlers/result_cache.py).
ENTRY_OVERHEAD_BYTES = 256


def budget_bytes() -> int:
    return int(registry_settings.CONTENT_CACHE_BYTES)


class ContentCache:
    """A thread-safe LRU whose capacity is a number of bytes."""

    def __init__(self, budget: Callable[[], int] = budget_bytes) -> None:
        self._budget = budget
        self._entries: OrderedDict[Hashable, tuple[Any, int]] = OrderedDict()
        self._lock = threading.Lock()
        self.used = 0
        self.hits = 0
        self.misses = 0
        self.uncached = 0

    def get(self, key: Hashable) -> Any | None:
        with self._lock:
            found = self._entries.get(key)
            if found is None:
                return None
            self._entries.move_to_end(key)
            self.hits += 1
            return found[0]

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def put(self, key: Hashable, value: Any, size: int) -> bool:
        """Keep `value` (about `size` bytes of payload) unless it is too large to cache; True when
        kept. It is charged `size` + ENTRY_OVERHEAD_BYTES against the budget."""
        budget = self._budget()
        with self._lock:
            if size > budget // ENTRY_FRACTION:
                self.uncached += 1
                return False
            size += ENTRY_OVERHEAD_BYTES
            old = self._entries.pop(key, None)
            if old is not None:
                self.used -= old[1]
            self._entries[key] = (value, size)
            self.used += size
            while self.used > budget and self._entries:
                _key, (_value, evicted) = self._entries.popitem(last=False)
                self.used -= evicted
            return True

    def get_or_load(self, key: Hashable, load: Callable[[], tuple[Any, int]]) -> Any:
        """The cached value, or `load()` -> (value, size) kept within the budget."""
        value = self.get(key)
        if value is not None:
            return value
        with self._lock:
            self.misses += 1
        value, size = load()
        self.put(key, value, size)
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self.used = 0

    def stats(self) -> dict[str, int]:
        with self._lock:
            return {"entries": len(self._entries), "bytes": self.used, "budget": self._budget(),
                    "hits": self.hits, "misses": self.misses, "uncached": self.uncached}


cache = ContentCache()
