"""The per-process cache of serialised results (list pages, resource reads), bounded by bytes.

Results are only valid for the catalog generation they were built from, and the generation
moves on every committed change. Entries of older generations can never be hit again, so
the cache keeps ONE generation: storing a result of a newer generation drops everything
older, and a late result of an older generation (a request that started before the change)
is not stored at all. Within a generation the least recently used entries go first once the
serialised bytes exceed the budget (MCP_ENDPOINT["RESULT_CACHE_BYTES"]) or the entry count
exceeds RESULT_CACHE_SIZE. Without this, every publish left a generation's worth of pages
behind and a long-running worker grew until the count limit, whatever the pages weighed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

# Rough cost of one entry beyond its serialised bytes (key tuple, OrderedDict node, wrapper).
ENTRY_OVERHEAD_BYTES = 256


class ResultCache:
    """LRU of serialised results for one catalog generation, bounded by bytes and entries."""

    def __init__(self, max_bytes: Callable[[], int], max_entries: Callable[[], int]) -> None:
        self._max_bytes = max_bytes
        self._max_entries = max_entries
        self._data: OrderedDict[Any, tuple[Any, int]] = OrderedDict()
        self._generation: int | None = None
        self._bytes = 0
        self._lock = threading.Lock()  # stdio and tests may use it from more than one thread

    @property
    def nbytes(self) -> int:
        """Accounted size of what is held now: serialised bytes plus a fixed overhead per entry."""
        return self._bytes

    @property
    def generation(self) -> int | None:
        return self._generation

    def __len__(self) -> int:
        return len(self._data)

    def get(self, key: Any, generation: int) -> Any:
        with self._lock:
            if generation != self._generation:
                return None
            found = self._data.get(key)
            if found is None:
                return None
            self._data.move_to_end(key)
            return found[0]

    def put(self, key: Any, value: Any, generation: int, size: int) -> bool:
        """Store `value` (whose serialised form is `size` bytes); False when it is not kept."""
        cost = int(size) + ENTRY_OVERHEAD_BYTES
        with self._lock:
            if self._generation is None or generation > self._generation:
                self._clear()
                self._generation = generation
            elif generation < self._generation:
                return False  # built from a catalog that is already stale
            limit = int(self._max_bytes())
            if cost > limit:
                return False
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old[1]
            self._data[key] = (value, cost)
            self._bytes += cost
            entries = max(1, int(self._max_entries()))
            while self._data and (self._bytes > limit or len(self._data) > entries):
                _key, (_value, dropped) = self._data.popitem(last=False)
                self._bytes -= dropped
            return key in self._data

    def clear(self) -> None:
        with self._lock:
            self._clear()
            self._generation = None

    def _clear(self) -> None:
        self._data.clear()
        self._bytes = 0
