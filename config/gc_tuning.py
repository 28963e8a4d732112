"""Garbage-collector settings for a serving process (daphne, uvicorn), applied when the server
starts serving (config/asgi.py passes them to the router's ``on_start``), never at import.

A fan-out to thousands of streams allocates many short-lived objects (futures, handles, frames),
and an older-generation pass walks every object the process holds, Django's start-up objects
included, pausing the fan-out. Freezing what exists once the application is built moves those
objects out of every later collection, and rarer older-generation passes keep long pauses out of
a fan-out. The young generation keeps Python's default threshold on purpose: the server's
response path leaves short-lived reference cycles that hold a response's bytes, so with a young
threshold of 10,000 a worker that had served 50 blobs of 4 MiB held 369 MiB instead of 186.
Measured with bench/notify.py (1,000 listeners, one daphne worker, quiet machine): change ->
last listener p99 55 ms, against 102 ms with Python's defaults and 59 ms with a young
threshold of 10,000; bench/scale.py: RSS after reading 50 x 4 MiB 186 MiB.
"""

from __future__ import annotations

import gc

YOUNG_THRESHOLD = 700  # Python's default: young cycles holding response bytes die young
OLDER_THRESHOLDS = (50, 100)


def tune_for_serving() -> None:
    """Freeze the objects built so far and run older-generation passes rarely."""
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
