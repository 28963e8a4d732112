"""Which change-log ids this process has applied, so that none is ever skipped.

Ids come from a sequence, and sequence order is not commit order: a long transaction takes
its ids early and commits late, after shorter transactions with higher ids. A poller that
only reads "after the highest id seen" (or a fixed look-back window) skips it. This tracker
keeps, instead of one high-water mark:

* ``floor``: every id at or below it is applied (or given up on);
* ``applied``: the applied ids above ``floor``;
* ``gaps``: the ids between ``floor`` and the highest applied id that have not been seen,
  each with the time it was first missed. The poller asks the change log for them on every
  tick until they appear (a late commit) or are older than the gap bound (a rolled-back
  transaction leaves its ids unused forever; so does a transaction still open after the
  bound, which the periodic consistency check then catches).
"""

from __future__ import annotations

import time
from collections.abc import Iterable


class AppliedIds:
    """Applied change-log ids: a floor, the applied ids above it and the gaps below the top."""

    def __init__(self, floor: int = 0) -> None:
        self.floor = floor
        self.top = floor
        self.applied: set[int] = set()
        self.pending: set[int] = set()  # claimed, delivery not finished: the floor waits for them
        self.gaps: dict[int, float] = {}

    def seed(self, present: Iterable[int], top: int, *, now: float | None = None) -> None:
        """Start after ``top``: ids at or below it that exist are old news; missing ids from
        ``self.floor`` up to ``top`` may be transactions still in flight, so they are gaps."""
        now = time.monotonic() if now is None else now
        present = set(present)
        for change_id in range(self.floor + 1, top + 1):
            if change_id in present:
                self.applied.add(change_id)
            else:
                self.gaps[change_id] = now
        self.top = max(self.top, top)
        self._advance()

    def is_new(self, change_id: int) -> bool:
        return change_id > self.top or (change_id > self.floor and change_id not in self.applied)

    def claim(self, ids: Iterable[int], *, now: float | None = None) -> list[int]:
        """Mark ``ids`` applied; returns the ones that were not (in the given order)."""
        now = time.monotonic() if now is None else now
        fresh: list[int] = []
        for change_id in ids:
            if not self.is_new(change_id):
                continue
            if change_id > self.top:
                for missing in range(self.top + 1, change_id):
                    self.gaps[missing] = now
                self.top = change_id
            self.gaps.pop(change_id, None)
            self.applied.add(change_id)
            self.pending.add(change_id)
            fresh.append(change_id)
        return fresh

    def done(self, ids: Iterable[int]) -> None:
        """``ids`` (claimed) have been delivered: the floor may pass them."""
        self.pending.difference_update(ids)
        self._advance()

    def floor_if_done(self, ids: Iterable[int]) -> int:
        """The floor once ``ids`` are done: the change-log position a frame for them stands for."""
        ids = set(ids)
        floor = self.floor
        while (floor + 1) in self.applied and ((floor + 1) not in self.pending or (floor + 1) in ids):
            floor += 1
        return floor

    def release(self, ids: Iterable[int], *, now: float | None = None) -> None:
        """``ids`` were claimed but could not be delivered: want them again from the change log."""
        now = time.monotonic() if now is None else now
        for change_id in ids:
            self.pending.discard(change_id)
            if change_id > self.floor and change_id in self.applied:
                self.applied.discard(change_id)
                self.gaps[change_id] = now

    def expire(self, older_than: float, *, now: float | None = None) -> list[int]:
        """Give up on gaps first missed more than ``older_than`` seconds ago; returns them."""
        now = time.monotonic() if now is None else now
        old = [change_id for change_id, since in self.gaps.items() if now - since > older_than]
        for change_id in old:
            del self.gaps[change_id]
            self.applied.add(change_id)
        if old:
            self._advance()
        return sorted(old)

    def _advance(self) -> None:
        while (self.floor + 1) in self.applied and (self.floor + 1) not in self.pending:
            self.floor += 1
            self.applied.discard(self.floor)
