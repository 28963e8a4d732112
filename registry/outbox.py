"""The mechanics every outbox shares: rows written in the changing transaction, sent after commit
by whichever worker claims them, each under a lease, retried with backoff.

Webhook deliveries (webhooks/delivery.py) and e-mail to people (registry/mail/sending.py) are
both outboxes; what they send differs, how a row is claimed, recorded and retried does not, so
it is defined here once:

- `claim` leases due rows to one worker in a short transaction: `select_for_update(skip_locked=
  True)` where the database has it (PostgreSQL), and everywhere a compare-and-set on the lease
  token read, so of two workers claiming one row exactly one wins, on SQLite too.
- The lease is far longer than one attempt may take, so no send outlives its lease and nobody
  else sends the row meanwhile; a worker sending several claimed rows in turn renews each row's
  lease just before its attempt (`renew`) and skips a row whose lease it lost. Only the worker
  holding the token records the outcome (`record_outcome`): a worker whose lease ran out and was
  taken over records nothing, so a late outcome never overwrites a newer one.
- A failed attempt is retried after the next step of the backoff; after the last one the row is
  marked failed.
- The sending runs outside any transaction and never in a web request: in a worker
  (`manage.py registry_worker`) or a server process's sender thread (`SenderThread`).

An outbox model has the fields `status` (PENDING, a sent status, FAILED), `attempts`,
`next_attempt_at`, `last_attempt_at`, `last_error`, `lease_token` and `leased_until`.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Sequence
from datetime import datetime, timedelta
from typing import Any

from django.apps import apps
from django.db import close_old_connections, connection, models, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

log = logging.getLogger(__name__)

PENDING = "pending"
FAILED = "failed"
ERROR_CHARS = 300  # last_error keeps a short reason
SERVER_PROGRAMS = {"daphne", "uvicorn", "gunicorn", "hypercorn"}


def unleased(now: datetime) -> Q:
    """Rows nobody holds a lease on at `now`."""
    return Q(leased_until__isnull=True) | Q(leased_until__lte=now)


def claim(due: Callable[[datetime], models.QuerySet], *, lease_s: float, limit: int = 1,
          now: datetime | None = None, exclude: Collection[int] = frozenset(),
          related: Sequence[str] = ()) -> list[Any]:
    """Lease up to `limit` rows of `due(now)` (unleased, pending rows that are due) to this worker.

    Each row comes back with its new `lease_token` and `leased_until`."""
    now = now or timezone.now()
    claimed: list[Any] = []
    with transaction.atomic():
        rows = due(now).exclude(pk__in=exclude).order_by("next_attempt_at", "id")
        if related:
            rows = rows.select_related(*related)
        if connection.features.has_select_for_update_skip_locked:
            of = ("self",) if connection.features.has_select_for_update_of else ()
            rows = rows.select_for_update(skip_locked=True, of=of)
        for row in rows[:limit]:
            token, until = uuid.uuid4(), now + timedelta(seconds=lease_s)
            # Compare-and-set on the token read: where rows are not locked, a claim that got in
            # first changed it, and this one matches nothing.
            won = due(now).filter(pk=row.pk, lease_token=row.lease_token).update(lease_token=token,
                                                                                leased_until=until)
            if won:
                row.lease_token, row.leased_until = token, until
                claimed.append(row)
    return claimed


def outcome_changes(row: Any, *, sent: bool, permanent: bool, error: str, backoff_s: Sequence[float],
                    sent_status: str, sent_field: str, now: datetime) -> dict[str, Any]:
    """The fields one attempt's outcome sets: sent; failed for good (permanent, or the last attempt);
    or pending again at the next step of `backoff_s`. The lease ends either way."""
    attempts = row.attempts + 1
    changes: dict[str, Any] = {"attempts": attempts, "last_attempt_at": now, "last_error": error[:ERROR_CHARS],
                               "leased_until": None}
    if sent:
        changes.update({"status": sent_status, sent_field: now})
    elif permanent or attempts > len(backoff_s):
        changes.update(status=FAILED)
    else:
        changes.update(next_attempt_at=now + timedelta(seconds=backoff_s[attempts - 1]))
    return changes


def renew(row: Any, *, lease_s: float, now: datetime | None = None) -> bool:
    """Extend this worker's lease on `row` to `lease_s` from now, if it still holds it (and the row
    is pending); returns whether it does. A worker sending several claimed rows in turn renews
    before each one, so a slow server can never let a lease run out on a row not yet sent and a
    second worker send it too."""
    until = (now or timezone.now()) + timedelta(seconds=lease_s)
    held = bool(type(row).objects.filter(pk=row.pk, lease_token=row.lease_token, status=PENDING).update(
        leased_until=until))
    if held:
        row.leased_until = until
    return held


def record_outcome(row: Any, changes: dict[str, Any]) -> bool:
    """Store `changes` if this worker still holds the row's lease (and it is pending); returns whether
    it did. The caller's transaction (if any) holds the write."""
    held = bool(type(row).objects.filter(pk=row.pk, lease_token=row.lease_token, status=PENDING).update(**changes))
    if held:
        for name, value in changes.items():
            setattr(row, name, value)
    return held


def next_claimable_in(pending: models.QuerySet, *, now: datetime | None = None) -> float | None:
    """Seconds until one of the `pending` rows may be claimed (its retry time or the end of its lease)."""
    now = now or timezone.now()
    nxt = (pending.annotate(claimable_at=Greatest("next_attempt_at", Coalesce("leased_until", "next_attempt_at")))
           .order_by("claimable_at").values_list("claimable_at", flat=True).first())
    return None if nxt is None else max(0.0, (nxt - now).total_seconds())


class SenderThread:
    """One outbox's background sender in a server process: woken after a commit queued rows, it sends
    what is due, sleeps until the next retry (at most `idle_poll_s`) and ends when nothing is pending.

    A worker process may send from the same outbox at the same time: the lease decides who sends a row.
    """

    def __init__(self, name: str, *, work: Callable[[], object], next_due: Callable[[], float | None],
                 enabled: Callable[[], bool], idle_poll_s: float = 30.0) -> None:
        self.name = name
        self.work = work
        self.next_due = next_due
        self.enabled = enabled
        self.idle_poll_s = idle_poll_s
        self.thread: threading.Thread | None = None
        self._wakeup = threading.Event()
        self._lock = threading.Lock()

    def wake(self) -> None:
        """Run after commit: make sure the thread runs and looks at the outbox now."""
        if not self.enabled():
            return
        self._wakeup.set()  # before ensure(): a thread deciding to exit sees it (see run_forever)
        self.ensure()

    def ensure(self) -> None:
        with self._lock:
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self.run_forever, name=self.name, daemon=True)
                self.thread.start()

    def run_forever(self) -> None:
        """Send what is due, sleep until the next retry or a wake-up; exit when nothing is pending."""
        while not apps.ready:  # started from AppConfig.ready(): let start-up finish before any query
            time.sleep(0.2)
        while True:
            self._wakeup.clear()
            wait: float | None
            try:
                self.work()
                wait = self.next_due()
            except Exception:  # the rows stay pending and are retried
                log.exception("%s failed", self.name)
                wait = self.idle_poll_s
            finally:
                close_old_connections()
            if wait is None:
                with self._lock:
                    if not self._wakeup.is_set():
                        self.thread = None
                        connection.close()
                        return
                continue
            self._wakeup.wait(min(max(wait, 0.5), self.idle_poll_s))

    def start_if_serving(self, argv: Sequence[str] | None = None) -> None:
        """Start the thread when this process is a server (so retries continue after a restart)."""
        if is_server_process(list(sys.argv if argv is None else argv)) and self.enabled():
            self.ensure()


def server_program(argv: list[str]) -> str:
    """'daphne' for `daphne ...` and `python -m daphne ...` alike; 'manage.py' for manage.py."""
    first = argv[0] if argv else ""
    name = os.path.basename(first)
    if name == "__main__.py":  # python -m <package>
        name = os.path.basename(os.path.dirname(first))
    return name


def is_server_process(argv: list[str]) -> bool:
    """Whether `argv` runs a web server (daphne, uvicorn, ..., `manage.py runserver`'s serving child)."""
    program = server_program(argv)
    runserver = program == "manage.py" and "runserver" in argv[1:2]
    if runserver and "--noreload" not in argv and os.environ.get("RUN_MAIN") != "true":
        return False  # the autoreloader's parent process serves nothing
    return program in SERVER_PROGRAMS or runserver
