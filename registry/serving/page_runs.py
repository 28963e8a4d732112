"""The runs of a list read cold, kept until the next change, so a walk through every page does
not read the database once a page.

A cold list page (registry/serving/pages.py) reads a run: the entries a viewer's scope sees
after the cursor's key, in key order, as a partial catalog. A client that walks the whole list
asks for the page after it next: that run already holds the start of it, and the next read
continues with a run twice as long (up to `MAX_RUN`), so a walk of N entries reads about
N / MAX_RUN runs instead of N / page size pages, and the pages between are answered from memory
without a query or a thread hop.

A run is trusted only while nothing changed: it carries the generation (`changes.generation()`)
taken before its first query, and any committed change, here or caught up from another process,
bumps it, which retires every run at once (as it retires the catalog). So a page is never older
than a page read from the database at that moment would be. A run holds every entry of its key
range (after, last] that its scope's viewers may be served (each with its rollout) and every
entry with a rollout running, so each viewer's page is cut from it by the catalog's own rules.
"""

from __future__ import annotations

import bisect
import itertools
import threading
from dataclasses import dataclass
from typing import Any

from registry import changes
from registry.serving.catalog import Catalog
from registry.serving.viewer import Viewer

MAX_RUN = 2000  # entries read at most at once (an IN list of this many ids, well under every database's limit)
MAX_RUNS = 8  # runs kept at most, oldest dropped first: a few concurrent walks, some MiB at most
_LISTS = {"prompt": ("prompts", "name"), "resource": ("resources", "uri")}


@dataclass(frozen=True)
class Run:
    """Every entry of `kind` that viewers with `scope` may be served with a key in (after, last]
    (after None: from the start; `complete`: through the end of the list), as a partial catalog;
    `size` is how many entries it was asked for."""

    label: str
    kind: str
    scope: frozenset[str]
    after: str | None
    last: str | None
    complete: bool
    size: int
    catalog: Catalog
    walk: int = 0  # the walk that read it: a run continuing another is of its walk, a first one of a new walk

    def starts_by(self, after: str | None) -> bool:
        return self.after is None or (after is not None and self.after <= after)

    def answers(self, viewer: Viewer, after: str | None, count: int) -> bool:
        """Whether this run holds the first `count` entries `viewer` is listed after `after` (or
        all of them, to the end): the page `pages.page_catalog` would read."""
        if not self.starts_by(after):
            return False
        if self.complete:
            return True
        if self.last is None or (after is not None and after >= self.last):
            return False
        lister, key = _LISTS[self.kind]
        listed: list[dict[str, Any]] = getattr(self.catalog, lister)(viewer)
        start = 0 if after is None else bisect.bisect_right(listed, after, key=lambda item: item.get(key, ""))
        end = bisect.bisect_right(listed, self.last, key=lambda item: item.get(key, ""))
        return end - start >= count


_lock = threading.Lock()
_runs: list[Run] = []  # newest last
_walks = itertools.count(1)  # walk ids (Run.walk)


def _current(label: str, kind: str, scope: frozenset[str]) -> list[Run]:
    generation = changes.generation()
    with _lock:
        _runs[:] = [run for run in _runs if run.catalog.generation == generation]
        return [run for run in reversed(_runs) if run.label == label and run.kind == kind and run.scope == scope]


def covering(label: str, kind: str, viewer: Viewer, after: str | None, count: int) -> Catalog | None:
    """The catalog of a run read at this generation that answers the page, else None. No query."""
    for run in _current(label, kind, viewer.scope_tags):
        if run.answers(viewer, after, count):
            return run.catalog
    return None


def continued(label: str, kind: str, viewer: Viewer, after: str | None) -> Run | None:
    """The run a read after `after` continues (a walk), or None (a first page): of the runs that
    start by `after` and do not reach the end, the one reaching furthest, so that where several
    clients walk one list, each continues its own run, not the newest of another walk behind it."""
    walked = [run for run in _current(label, kind, viewer.scope_tags)
              if not run.complete and run.starts_by(after) and run.last is not None]
    return max(walked, key=lambda run: run.last or "", default=None)


def next_size(previous: Run | None) -> int:
    """How many entries the next run should read: twice the run it continues (a walk), up to
    MAX_RUN; 0 when it continues none (a first page stays as short as a page)."""
    return 0 if previous is None else min(MAX_RUN, 2 * previous.size)


def walk_of(previous: Run | None) -> int:
    """The walk a run continuing `previous` belongs to: its walk, or (none) a new one."""
    return previous.walk if previous is not None else next(_walks)


def add(run: Run) -> None:
    """Keep `run`, and drop its own walk's runs that end where it starts or before: that walk has
    moved past them. A walk so holds two runs at most, not MAX_RUNS, until the catalog is built: the
    runs' items, freed once it is, left the allocator's arenas that the catalog's items share part
    empty and not returnable (bench/memory.py, 20k + 20k walked cold beside the build: 187.7 MiB
    with eight runs kept, 170.5 with two). Another walk's runs stay, however far behind: dropping
    every run passed undid the doubling of two walks a few pages apart (7 -> 49 run reads for 400
    prompts)."""
    with _lock:
        _runs[:] = [kept for kept in _runs if not (kept.walk == run.walk and _passed(kept, run))]
        _runs.append(run)
        del _runs[:-MAX_RUNS]


def _passed(kept: Run, run: Run) -> bool:
    """Whether `run` starts at or after the end of `kept` (which does not reach the list's end)."""
    return not kept.complete and kept.last is not None and run.after is not None and kept.last <= run.after


def forget(label: str | None = None) -> None:
    """Drop the runs of `label` (its whole catalog is fresh now), or all of them."""
    with _lock:
        _runs[:] = [run for run in _runs if label is not None and run.label != label]
