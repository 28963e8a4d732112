"""Garbage-collector settings for a serving process (daphne, uvicorn), applied by config/asgi.py.

A fan-out to thousands of streams allocates many short-lived objects (futures, handles, frames),
so the default young-generation threshold (700 allocations) runs a collection every few dozen
streams, and an older-generation pass walks every object the process holds, Django's start-up
objects included. Freezing what exists once the application is built moves those objects out
of every later collection, and a larger young threshold makes collections rarer; cycles are
still collected. Measured with bench/notify.py (1,000 listeners, one daphne worker): the
publishing request's p50 12 ms instead of 15 ms, change -> last listener p99 52-87 ms instead
of 64-146 ms over three runs each.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 10_000
OLDER_THRESHOLDS = (50, 100)


def tune_for_serving() -> None:
    """Freeze the objects built so far and collect young garbage less often."""
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
