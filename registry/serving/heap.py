"""Give the memory a full catalog build freed back to the system.

A build decodes every version's listing and drops what the items do not keep (the rows, the
outer listing dicts, the previous catalog), and glibc's allocator keeps those freed pages in
its arenas (the build runs in a thread of its own, registry/serving/warmup.py, so in an arena
of its own too) instead of returning them. `malloc_trim(0)` returns them; elsewhere (musl,
macOS) there is nothing to call and nothing is done.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

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
