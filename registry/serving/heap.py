"""The heap around catalog reads: the collector paused while a cold run is read, and the memory
a full catalog build freed given back to the system.

A cold list page reads a run of up to 2,000 entries (registry/serving/pages.py), allocating tens
of thousands of containers that all survive the read (the run is kept for the pages after it),
so every young collection meanwhile walks them and promotes them, and older passes walk the runs
kept before. One read of 20k prompts took 410 ms with the collector as a server tunes it
(config/gc_tuning.py) and 230 ms without it; a cold walk of every page (bench/cold_listing.py,
20k + 20k, three alternating runs) went from 610-676 to 545-601 ms for prompts and from 555-709
to 501-587 ms for resources (the runs it reads are shorter). Those reads make no reference cycles, so
pausing the collector for one loses nothing; the pause is one run's read (tens of milliseconds),
counted across threads so overlapping reads resume it only when the last one ends, and never
turns on a collector something else had turned off. A whole catalog build is not paused: it
takes seconds, and the event loop's responses leave young cycles holding their bytes
(config/gc_tuning.py) that would pile up meanwhile.

A build decodes every version's listing and drops what the items do not keep (the rows, the
outer listing dicts, the previous catalog), and glibc's allocator keeps those freed pages in
its arenas (the build runs in a thread of its own, registry/serving/warmup.py, so in an arena
of its own too) instead of returning them. `malloc_trim(0)` returns them; elsewhere (musl,
macOS) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

_pause_lock = threading.Lock()
_pauses = [0, False]  # reads under way with the collector paused; whether the first found it on


@contextmanager
def collector_paused() -> Iterator[None]:
    """No cyclic garbage collection while the block runs (in any thread), unless another pause
    outlasts it; the collector is left as it was found once the last pause ends."""
    with _pause_lock:
        if _pauses[0] == 0:
            _pauses[1] = gc.isenabled()
            gc.disable()
        _pauses[0] += 1
    try:
        yield
    finally:
        with _pause_lock:
            _pauses[0] -= 1
            if _pauses[0] == 0 and _pauses[1]:
                gc.enable()


_trim: list[Callable[[int], int] | None] = []  # resolved once: libc's malloc_trim, or None


def _malloc_trim() -> Callable[[int], int] | None:
    if not _trim:
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            _trim.append(getattr(libc, "malloc_trim", None))
        except OSError:
            _trim.append(None)
    return _trim[0]


def release_freed_memory() -> bool:
    """Hand free heap pages back (True when malloc_trim ran). ctypes lets go of the GIL for the
    call, so the event loop keeps serving meanwhile; no gc.collect: the build's garbage holds no
    cycles, and a full collection over a large catalog would stall every thread."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
