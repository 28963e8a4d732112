"""A background catalog build gives way to the requests served beside it.

Why: the whole catalog is built in a thread of the serving process (registry/serving/warmup.py),
and building items is Python work that holds the GIL. CPython hands the GIL to a waiting thread
only once per switch interval (5 ms by default), so while a build ran right after a restart, every
list page waited up to that long for the event loop to run again: over HTTP right after a
restart, a cold walk of 20k prompts took 1.03-1.14 s beside the build, and takes 0.38-0.40 s now
that the build gives way (bench/restart_listing.py, README "Cold start"). Two remedies, both
public CPython behaviour:

- while any build runs, the interpreter's switch interval is lowered to BUILD_SWITCH_INTERVAL
  (`sys.setswitchinterval`), and restored when the last build ends, so a request that arrives
  mid-build waits at most about that long for the GIL;
- a build calls `checkpoint()` between entries; while a request is being served (the protocol
  layer marks it with `serving()`), the build sleeps there in short steps, so the request's threads
  have the GIL to themselves, but never longer than MAX_PAUSE in a row: between two pauses the
  build does CHECKPOINT_EVERY entries of work, and once it has paused PAUSE_BUDGET in all it
  pauses no more, so a steady stream of requests delays it by at most that and never stops it
  (a 20k + 20k build under a request that never ends, before the build got twice as fast
  on 2026-12-07: 0.72 s alone, 1.76 s); a cold walk of 20k
  prompts delays it by 0.3-0.4 s. It also gives way for GRACE after a request ends: a client
  walking a list sends its next page at once, and a build that resumed in between held the GIL
  when it came (a cold walk of 20k prompts over HTTP: 0.57-0.70 s without the grace, 0.38-0.45 s
  with it, 0.28-0.30 s with no build at all).

Nobody may wait for a build that gives way: a request that needs the whole catalog (a get or
read no part answers, a completion, a label's first listener) marks its wait with
`awaiting_build()`, and a caller blocked on the catalogs' build lock (a change's refresh, on the
endpoint's one database thread that every request's reads queue behind) with `build_awaited()`;
while any such wait lasts, the build runs at full speed, as it did before it gave way at all.

Only a build thread (inside `building()`) ever pauses, and only a whole build or a refresh passes
checkpoints: a request's own read of part of the catalog (registry/serving/pages.py) passes none.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

BUILD_SWITCH_INTERVAL = 0.0005  # seconds; the GIL's hand-over period while a build runs
PAUSE_STEP = 0.0005  # seconds a paused build sleeps before looking again
MAX_PAUSE = 0.005  # seconds a build may pause in a row, before its next CHECKPOINT_EVERY entries
PAUSE_BUDGET = 1.0  # seconds a build may pause in all; then it finishes at full speed
GRACE = 0.002  # seconds after a request ends that a build still gives way (a walk's next page is on its way)
CHECKPOINT_EVERY = 32  # entries a build reads between checkpoints (about 0.5 ms of work here)

_lock = threading.Lock()
_state = {"serving": 0, "builds": 0, "awaited": 0}  # awaited: callers waiting for a build to end
_last_served = [0.0]  # time.monotonic() when the latest request ended
_restore_interval: list[float] = []  # the switch interval before the first running build lowered it
_builder = threading.local()


class _Request:
    """One request's mark, shared with the tasks it starts (they copy its context)."""

    __slots__ = ("counted", "open")

    def __init__(self) -> None:
        self.counted = True  # counted in _state["serving"] now
        self.open = True  # still being served: a task outliving it never counts it again


_request: ContextVar[_Request | None] = ContextVar("registry_serving_request", default=None)


def requests_served() -> int:
    """How many requests are being served now (awaiting the build not counted)."""
    return _state["serving"]


def builds_awaited() -> int:
    """How many callers wait for a build to end now (none: a build may give way)."""
    return _state["awaited"]


def _mark(request: _Request, counted: bool) -> None:
    """Count or uncount `request` (under the lock; nothing if it already is so)."""
    if request.counted != counted:
        request.counted = counted
        _state["serving"] += 1 if counted else -1


@contextmanager
def serving() -> Iterator[None]:
    """Marks the request served inside the block: a running build gives way to it."""
    request = _Request()
    token = _request.set(request)
    with _lock:
        _state["serving"] += 1
    try:
        yield
    finally:
        with _lock:
            _mark(request, False)
            request.open = False
        _last_served[0] = time.monotonic()
        _request.reset(token)


@contextmanager
def build_awaited() -> Iterator[None]:
    """Marks the block as waiting for a build to end (its result, or the catalogs' build lock): no
    build gives way meanwhile, since whoever waits, and every request queued behind it (the
    endpoint's database calls share one thread), waits for the build itself."""
    with _lock:
        _state["awaited"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["awaited"] -= 1


@contextmanager
def awaiting_build() -> Iterator[None]:
    """Marks the block as a request (if any) waiting for the build: it is not counted as served
    meanwhile, and no build gives way (`build_awaited`) until it has its catalog."""
    request = _request.get()
    if request is not None:
        with _lock:
            _mark(request, False)
    try:
        with build_awaited():
            yield
    finally:
        if request is not None:
            with _lock:
                if request.open:
                    _mark(request, True)


@contextmanager
def building() -> Iterator[None]:
    """Marks this thread as running a background build: its checkpoints give way to requests, and
    the switch interval stays lowered until the last such build ends."""
    with _lock:
        if _state["builds"] == 0:
            before = sys.getswitchinterval()
            _restore_interval[:] = [before]
            sys.setswitchinterval(min(before, BUILD_SWITCH_INTERVAL))
        _state["builds"] += 1
    _builder.active = True
    _builder.paused = 0.0
    try:
        yield
    finally:
        _builder.active = False
        with _lock:
            _state["builds"] -= 1
            if _state["builds"] == 0 and _restore_interval:
                sys.setswitchinterval(_restore_interval.pop())


def _gives_way() -> bool:
    if _state["awaited"]:
        return False
    return _state["serving"] > 0 or time.monotonic() - _last_served[0] < GRACE


def checkpoint() -> float:
    """Called by a build between entries: in a background build's thread, while a request is
    served or one ended less than GRACE ago, and nobody waits for a build, sleep until that
    changes (at most MAX_PAUSE, and PAUSE_BUDGET over the whole build). Returns the seconds
    paused."""
    if not _gives_way() or not getattr(_builder, "active", False):
        return 0.0
    budget = PAUSE_BUDGET - _builder.paused
    if budget <= 0:  # this build has given way enough: it finishes at full speed
        return 0.0
    started = time.perf_counter()
    deadline = started + min(MAX_PAUSE, budget)
    while _gives_way():
        now = time.perf_counter()
        if now >= deadline:
            break
        time.sleep(min(PAUSE_STEP, deadline - now))
    paused = time.perf_counter() - started
    _builder.paused += paused
    return paused
