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

from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, IntegrityError, close_old_connections, connection, transaction
from django.db.models import F, Q, QuerySet, UniqueConstraint

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
    now = datetime.now(UTC)
    with _lock:
        _pending[key] += 1
        _last_seen[key] = now
    if AUTO_FLUSH and (_flusher is None or not _flusher.is_alive()):  # checked here: no call per fetch
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


# The fields of a pending counter's key (`_Key`), in its order.
_KEY_FIELDS = ("client", "client_name", "entry_kind", "entry_key", "version", "label")


def unique_fields() -> tuple[str, ...]:
    """The fields one counter is unique by, read from the model (its UniqueConstraint, else its
    unique_together): the batch upsert's conflict target and the row-by-row lookup both use this
    one definition, so a change to the model cannot leave the SQL matching another key."""
    meta = FetchCounter._meta
    declared = [tuple(c.fields) for c in meta.constraints
                if isinstance(c, UniqueConstraint) and c.fields and c.condition is None]
    declared += [tuple(fields) for fields in meta.unique_together]
    if len(declared) != 1 or not set(declared[0]) <= set(_KEY_FIELDS):
        raise ImproperlyConfigured(f"FetchCounter needs one unique key among {_KEY_FIELDS}, has {declared}")
    return declared[0]


def upsert_sql() -> str:
    """The batch upsert: insert each counter, or add its count to the row holding its unique key."""
    quote = connection.ops.quote_name
    table = quote(FetchCounter._meta.db_table)
    columns = [quote(_column(name)) for name in (*_KEY_FIELDS, "count", "first_at", "last_at")]
    conflict = [quote(_column(name)) for name in unique_fields()]
    return (f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join(['%s'] * len(columns))}) "
            f"ON CONFLICT ({', '.join(conflict)}) "
            f"DO UPDATE SET count = {table}.count + excluded.count, last_at = excluded.last_at")


def _column(name: str) -> str:
    return str(FetchCounter._meta.get_field(name).column)  # type: ignore[union-attr]  # concrete fields


def _upsert_all(batch: dict[_Key, int], seen: dict[_Key, datetime]) -> None:
    """One statement for every counter: a per-row ORM upsert cost ~0.25 ms each on the server's CPU."""
    adapt = connection.ops.adapt_datetimefield_value
    rows = [(*key, count, adapt(seen[key]), adapt(seen[key])) for key, count in batch.items()]
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(upsert_sql(), rows)


def _upsert(key: _Key, count: int, when: datetime) -> None:
    values = dict(zip(_KEY_FIELDS, key, strict=True))
    lookup = {name: values[name] for name in unique_fields()}
    client_id = values["client"]
    if client_id is not None and not McpClient.objects.filter(pk=client_id).exists():
        client_id = None  # deleted since it was served: keep the count under its name
    rest = {name: value for name, value in values.items() if name not in lookup and name != "client"}
    for _attempt in range(2):
        with transaction.atomic():
            updated = FetchCounter.objects.filter(**lookup).update(count=F("count") + count, last_at=when)
            if updated:
                return
            try:
                with transaction.atomic():
                    FetchCounter.objects.create(client_id=client_id, count=count, first_at=when, last_at=when,
                                                **lookup, **rest)
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
