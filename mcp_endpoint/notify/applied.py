"""Which change-log ids this process has applied, so that none is ever skipped.

Ids come from a sequence, and sequence order is not commit order: a long transaction takes
its ids early and commits late, after shorter transactions with higher ids. A poller that
only reads "after the highest id seen" (or a fixed look-back window) skips it. This tracker
keeps, instead of one high-water mark:

* ``top``: the highest id applied; every id at or below it is applied, except
* ``gaps``: ids below ``top`` not seen yet, each with the time it was first missed. The
  poller asks the change log for them on every tick until they appear (a late commit) or are
  older than the gap bound (a rolled-back transaction leaves its ids unused forever; so does
  a transaction still open after the bound, which the periodic consistency check catches);
* ``pending``: ids being delivered right now (a failed delivery releases them into gaps).

``floor`` follows: every id at or below it is applied (or given up on). It is the position
legacy GET streams hand out as SSE event ids.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

MAX_GAPS = 100_000  # a larger jump in ids is not tracked id by id; the hub checks its catalogs instead


class AppliedIds:
    """Applied change-log ids: the highest one, and the gaps and deliveries in flight below it."""

    def __init__(self, floor: int = 0) -> None:
        self.top = floor
        self.gaps: dict[int, float] = {}
        self.pending: set[int] = set()
        self.doubt = False  # ids were skipped without tracking: the catalogs should be checked

    @property
    def floor(self) -> int:
        return self.floor_if_done(())

    def floor_if_done(self, ids: Iterable[int]) -> int:
        """The floor once ``ids`` are done: the change-log position a frame for them stands for."""
        waiting = self.pending.difference(ids)
        lowest = min(min(self.gaps, default=self.top + 1), min(waiting, default=self.top + 1))
        return lowest - 1

    def seed(self, present: Iterable[int], top: int, *, now: float | None = None) -> None:
        """Start at ``top``: ids at or below it that exist are old news; missing ids above the
        current top may be transactions still in flight, so they are gaps."""
        now = time.monotonic() if now is None else now
        present = set(present)
        for change_id in range(max(self.top + 1, top - MAX_GAPS + 1), top + 1):
            if change_id not in present:
                self.gaps[change_id] = now
        self.top = max(self.top, top)

    def is_new(self, change_id: int) -> bool:
        return change_id > self.top or change_id in self.gaps

    def claim(self, ids: Iterable[int], *, now: float | None = None) -> list[int]:
        """Mark ``ids`` as being applied; returns the ones that were new (in the given order)."""
        now = time.monotonic() if now is None else now
        fresh: list[int] = []
        for change_id in ids:
            if not self.is_new(change_id) or change_id in self.pending:
                continue
            if change_id > self.top:
                start = self.top + 1
                if change_id - start > MAX_GAPS:
                    start, self.doubt = change_id - MAX_GAPS, True
                for missing in range(start, change_id):
                    self.gaps[missing] = now
                self.top = change_id
            self.gaps.pop(change_id, None)
            self.pending.add(change_id)
            fresh.append(change_id)
        return fresh

    def done(self, ids: Iterable[int]) -> None:
        """``ids`` (claimed) have been delivered: the floor may pass them."""
        self.pending.difference_update(ids)

    def release(self, ids: Iterable[int], *, now: float | None = None) -> None:
        """``ids`` were claimed but could not be delivered: want them again from the change log."""
        now = time.monotonic() if now is None else now
        for change_id in ids:
            if change_id in self.pending:
                self.pending.discard(change_id)
                self.gaps[change_id] = now

    def expire(self, older_than: float, *, now: float | None = None) -> list[int]:
        """Give up on gaps first missed more than ``older_than`` seconds ago; returns them."""
        now = time.monotonic() if now is None else now
        old = sorted(change_id for change_id, since in self.gaps.items() if now - since > older_than)
        for change_id in old:
            del self.gaps[change_id]
        return old

    def take_doubt(self) -> bool:
        """Whether ids were skipped untracked since the last call (then: check the catalogs)."""
        doubt, self.doubt = self.doubt, False
        return doubt
