"""Small facts about the registry, read once per catalog generation instead of once per cold read.

A cold list read (registry/serving/pages.py) asks the database a few questions whose answers
change only when the registry does: which entries have a rollout running on the label, whether
any label row lacks its served key. Asked again for each of a walk's 14 runs, those probes cost
about a tenth of the walk (bench/cold_listing.py, 20k prompts: 36 of 500 ms). Their answers are
kept here under the generation taken before the query (`changes.generation()`), which every
committed change bumps, here or caught up from another process; so an answer is never older than
the runs and catalogs read at the same generation, and a change committed during the query makes
it stale at once. Values must not be changed by callers (they are shared).

Two limits, both deliberate. Rows written around the model (raw SQL) move no generation, so a
kept answer meets them only after the next change or the endpoint hub's consistency check, which
repairs what they change in what is served; the runs and catalogs of that generation do not see
them either. And a process that never starts the hub (one serving only admin pages) never
catches up on other processes' changes: its answers for one entry ask the database afresh
(`catalogs.entry_item`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TypeVar

from registry import changes

T = TypeVar("T")
MAX_KEPT = 256  # distinct questions kept at most (labels x kinds: a handful in practice)

_lock = threading.Lock()
_kept: dict[Hashable, tuple[int, object]] = {}


def remembered(key: Hashable, ask: Callable[[], T]) -> T:
    """`ask()`'s answer, from memory if it was asked at the current generation."""
    generation = changes.generation()  # before the query: a change committed meanwhile retires the answer
    found = _kept.get(key)
    if found is not None and found[0] == generation:
        return found[1]  # type: ignore[return-value]
    answer = ask()
    with _lock:
        if len(_kept) >= MAX_KEPT:
            _kept.clear()
        _kept[key] = (generation, answer)
    return answer
