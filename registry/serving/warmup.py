"""Build a label's catalog in a background thread, once per label at a time.

The MCP endpoint answers list pages from the database while a catalog is missing
(registry/serving/pages.py) and asks for it here; requests that need the whole catalog
(get, read, completion) wait on the same build. The build runs in a thread of its own rather
than in the endpoint's database executor, so the page queries are not queued behind it, and it
gives way to the requests served meanwhile (registry/serving/yielding.py), so a cold walk's pages
do not wait behind it for the GIL.
A change committed during the build bumps the generation, so the finished catalog is already
stale: list requests read the database meanwhile, and a request that asks for the catalog
after the change gets a build started after it (the builds take turns under the catalog's
lock), so a publish during a warm-up is served at once and never lost.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import Future

from django.db import connections

from registry import changes
from registry.serving import catalogs, page_runs, yielding
from registry.serving.catalog import Catalog

log = logging.getLogger(__name__)

_lock = threading.Lock()
_running: dict[str, tuple[int, Future[Catalog]]] = {}  # label -> (generation when asked, build)
_threads: set[threading.Thread] = set()


def warm(label: str) -> Future[Catalog]:
    """`label`'s fresh catalog, the build of it under way, or (none, or it began before the
    latest change) a new one started in a daemon thread."""
    fresh = catalogs.cached_catalog(label)
    if fresh is not None:  # built meanwhile: nothing to do
        done: Future[Catalog] = Future()
        done.set_result(fresh)
        return done
    with _lock:
        generation = changes.generation()
        asked, future = _running.get(label, (-1, None))
        if future is not None and not future.done() and asked == generation:
            return future
        future = Future()
        future.set_running_or_notify_cancel()  # a waiter that goes away cannot cancel the build
        _running[label] = (generation, future)
        thread = threading.Thread(target=_build, args=(label, future), name=f"catalog-warmup:{label}",
                                  daemon=True)
        _threads.add(thread)
    thread.start()
    return future


def _build(label: str, future: Future[Catalog]) -> None:
    try:
        with yielding.building():  # gives way to the requests served meanwhile
            catalog = catalogs.load_catalog(label)
        page_runs.forget(label)  # the catalog answers its pages now: the runs read meanwhile are not needed
        future.set_result(catalog)
    except BaseException as exc:  # the next request starts another build
        log.warning("building the catalog of label %r failed", label, exc_info=True)
        future.set_exception(exc)
    finally:
        connections.close_all()  # this thread's connections only
        with _lock:
            _threads.discard(threading.current_thread())


def join(timeout: float = 30.0) -> None:
    """Wait for the builds under way (tests: before their database goes away)."""
    with _lock:
        threads = list(_threads)
    for thread in threads:
        thread.join(timeout)
