"""Counting which client was served which version, batched off the request path.

`record_fetch` only bumps an in-memory counter; a daemon thread writes the totals to
FetchCounter every few seconds (and at exit), so serving a prompt never waits on a write.
"""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections import Counter
from datetime import UTC, datetime

from django.db import DatabaseError, IntegrityError, close_old_connections, connection, transaction
from django.db.models import F, Q, QuerySet

from registry.models import FetchCounter, McpClient, VersionedEntry
from registry.models.base import served_key_of
from registry.serving.items import Served
from registry.serving.viewer import Viewer

log = logging.getLogger(__name__)
FLUSH_INTERVAL_S = 2.0
AUTO_FLUSH = True  # tests switch the background thread off and call flush() themselves

_Key = tuple[int | None, str, str, str, int, str]  # client id, client name, kind, key, version, label
_pending: Counter[_Key] = Counter()
_last_seen: dict[_Key, datetime] = {}
_lock = threading.Lock()
_flusher: threading.Thread | None = None


def record_fetch(served: Served, viewer: Viewer) -> None:
    """Count one served prompts/get or resources/read; cheap and non-blocking."""
    if not getattr(served, "counted", True):
        return
    key = (viewer.client_id, viewer.client_name, served.kind, served.key, served.version, served.label)
    with _lock:
        _pending[key] += 1
        _last_seen[key] = datetime.now(UTC)
    if AUTO_FLUSH:
        _ensure_flusher()


def counters_for(entry: VersionedEntry) -> QuerySet[FetchCounter]:
    """Every counter of `entry`, read by the key `record_fetch` writes it under: per version, the
    key that version is served as (`served_key_of`, the catalog's item key), never the draft's,
    which a rename changes before anything is published under it (issue 20)."""
    numbers_by_key: dict[str, list[int]] = {}
    for number, listing in entry.versions.values_list("number", "listing"):
        key = served_key_of(listing, None) or served_key_of(
            None, entry.versions.filter(number=number).values_list("snapshot", flat=True).first())
        numbers_by_key.setdefault(key, []).append(number)
    if not numbers_by_key:
        return FetchCounter.objects.none()
    match = Q()
    for key, numbers in numbers_by_key.items():
        match |= Q(entry_key=key, version__in=sorted(numbers))
    return FetchCounter.objects.filter(match, entry_kind=entry.kind)


def _ensure_flusher() -> None:
    global _flusher
    if _flusher is None or not _flusher.is_alive():
        with _lock:
            if _flusher is None or not _flusher.is_alive():
                _flusher = threading.Thread(target=_flush_forever, name="fetch-counter-flush", daemon=True)
                _flusher.start()


def _flush_forever() -> None:
    while True:
        time.sleep(FLUSH_INTERVAL_S)
        try:
            flush()
        except Exception:  # keep counting even if one flush failed; the counts are retried
            log.exception("could not write fetch counters")
        finally:
            close_old_connections()


def flush() -> int:
    """Write pending counts to the database; returns how many counters were touched."""
    with _lock:
        batch = dict(_pending)
        seen = dict(_last_seen)
        _pending.clear()
        _last_seen.clear()
    if not batch:
        return 0
    try:
        _upsert_all(batch, seen)
        return len(batch)
    except DatabaseError:  # one bad row (e.g. its client was deleted) fails the statement: go row by row
        log.info("fetch counters: batch upsert failed; writing row by row", exc_info=True)
    failed: dict[_Key, int] = {}
    for key, count in batch.items():
        try:
            _upsert(key, count, seen[key])
        except IntegrityError:
            # The client row is gone; keep the count under its name without the link.
            try:
                _upsert((None, *key[1:]), count, seen[key])
            except DatabaseError:
                failed[key] = count
        except DatabaseError:
            failed[key] = count
    if failed:
        with _lock:  # put back only what was not written, so nothing is counted twice
            for key, count in failed.items():
                _pending[key] += count
                _last_seen.setdefault(key, seen[key])
        log.warning("fetch counters: %d counters will be retried", len(failed))
    return len(batch) - len(failed)


_UPSERT = """
INSERT INTO {table} (client_id, client_name, entry_kind, entry_key, version, label, count, first_at, last_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (client_name, entry_kind, entry_key, version, label)
DO UPDATE SET count = {table}.count + excluded.count, last_at = excluded.last_at
"""


def _upsert_all(batch: dict[_Key, int], seen: dict[_Key, datetime]) -> None:
    """One statement for every counter: a per-row ORM upsert cost ~0.25 ms each on the server's CPU."""
    table = connection.ops.quote_name(FetchCounter._meta.db_table)
    adapt = connection.ops.adapt_datetimefield_value
    rows = [
        (client_id, client_name, kind, entry_key, version, label, count, adapt(seen[key]), adapt(seen[key]))
        for key, count in batch.items()
        for client_id, client_name, kind, entry_key, version, label in (key,)
    ]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(_UPSERT.format(table=table), rows)


def _upsert(key: _Key, count: int, when: datetime) -> None:
    client_id, client_name, kind, entry_key, version, label = key
    lookup = {"client_name": client_name, "entry_kind": kind, "entry_key": entry_key, "version": version,
              "label": label}
    if client_id is not None and not McpClient.objects.filter(pk=client_id).exists():
        client_id = None  # deleted since it was served: keep the count under its name
    for _attempt in range(2):
        with transaction.atomic():
            updated = FetchCounter.objects.filter(**lookup).update(count=F("count") + count, last_at=when)
            if updated:
                return
            try:
                with transaction.atomic():
                    FetchCounter.objects.create(client_id=client_id, count=count, first_at=when, last_at=when, **lookup)
                return
            except IntegrityError:  # another process created it first; update it instead
                continue


@atexit.register
def _flush_at_exit() -> None:
    if _pending and connection.vendor:
        try:
            flush()
        except Exception:
            log.warning("fetch counters lost at exit", exc_info=True)
