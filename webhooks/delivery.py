"""Sending the outbox: signed POSTs, one lease per delivery, retried with exponential backoff.

A worker (a server process's sender thread, ``manage.py deliver_webhooks``) claims ONE due
delivery at a time in a short transaction (``select_for_update(skip_locked=True)`` where the
database has it, and a compare-and-set on the lease token everywhere) and sends it at once. The
lease (``LEASE_S``) is far longer than one attempt may take (``ATTEMPT_S``, enforced by
``webhooks.transport``), so no send outlives its lease and no other worker sends the same
delivery meanwhile. Only the worker holding the lease token records the outcome; a worker whose
lease was taken over records nothing. The HTTP request runs outside any transaction and never
in a web request.

A receiver that is down gets one request per backoff step, not one per queued delivery: a failed
attempt postpones the webhook's other due deliveries to the same retry time.
"""

from __future__ import annotations

import http.client
import json
import logging
import os
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.apps import apps
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.db.models import Q
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from webhooks import transport
from webhooks.events import Event
from webhooks.models import DeliveryStatus, WebhookDelivery
from webhooks.signing import sign

log = logging.getLogger(__name__)

TIMEOUT_S = transport.TIMEOUT_S  # one socket operation
ATTEMPT_S = 15.0  # a whole attempt: DNS, connect, TLS, request, response status
# Wait after attempt 1, 2, ...; after the last one the delivery is marked failed.
BACKOFF_S = (10, 30, 120, 600, 3600)
MAX_ATTEMPTS = len(BACKOFF_S) + 1
LEASE_S = 60  # a claimed delivery is invisible to other workers this long; an attempt gets at most half
IDLE_POLL_S = 30.0
USER_AGENT = "mcp-prompt-registry-webhooks/1"
SERVER_PROGRAMS = {"daphne", "uvicorn", "gunicorn", "hypercorn"}
ERROR_CHARS = 300  # last_error keeps a short reason, never what the receiver answered


@dataclass
class Outcome:
    delivered: bool
    status_code: int | None = None
    error: str = ""
    permanent: bool = False  # retrying cannot help (e.g. the address is not allowed)

    @property
    def receiver_down(self) -> bool:
        """No answer, or an answer saying "not now": the webhook's other deliveries wait too."""
        return not self.delivered and not self.permanent and (
            self.status_code is None or self.status_code >= 500 or self.status_code in (408, 429))


def body_of(delivery: WebhookDelivery) -> bytes:
    """The signed body: the event payload plus the delivery id receivers deduplicate on."""
    document = {**delivery.payload, "delivery_id": str(delivery.delivery_id)}
    return json.dumps(document, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _short(exc: BaseException) -> str:
    reason = getattr(exc, "reason", None) or str(exc) or "no details"
    return f"{type(exc).__name__}: {reason}"[:ERROR_CHARS]


def send(delivery: WebhookDelivery, *, now: float | None = None, deadline: float | None = None) -> Outcome:
    """POST one delivery, finished by `deadline` (monotonic; default ATTEMPT_S from now); never raises."""
    if delivery.event not in Event.values:  # it becomes a header: only the known names go out
        return Outcome(False, error="Unknown event name; not sent.", permanent=True)
    webhook = delivery.webhook
    body = body_of(delivery)
    timestamp = str(int(time.time() if now is None else now))
    headers = {
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        "X-Registry-Event": delivery.event,
        "X-Registry-Delivery": str(delivery.delivery_id),
        "X-Registry-Timestamp": timestamp,
        "X-Registry-Signature": sign(webhook.secret, timestamp, body),
    }
    deadline = time.monotonic() + ATTEMPT_S if deadline is None else deadline
    try:
        code = transport.post(webhook.url, body, headers, deadline=deadline)
    except transport.Refused as exc:
        return Outcome(False, error=str(exc)[:ERROR_CHARS], permanent=True)
    except (OSError, http.client.HTTPException, ValueError) as exc:
        return Outcome(False, error=_short(exc))
    if 200 <= code < 300:
        return Outcome(True, status_code=code)
    if 300 <= code < 400:
        return Outcome(False, status_code=code,
                       error=f"The receiver answered HTTP {code} (a redirect); redirects are not followed.")
    return Outcome(False, status_code=code, error=f"The receiver answered HTTP {code}.")


def _unleased(now: datetime) -> Q:
    return Q(leased_until__isnull=True) | Q(leased_until__lte=now)


def _due(now: datetime):
    return WebhookDelivery.objects.filter(_unleased(now), status=DeliveryStatus.PENDING,
                                          next_attempt_at__lte=now, webhook__active=True)


def claim(limit: int = 1, *, now: datetime | None = None, exclude: set[int] | frozenset[int] = frozenset()
          ) -> list[WebhookDelivery]:
    """Lease up to `limit` due deliveries to this worker; each comes with its new `lease_token`."""
    now = now or timezone.now()
    claimed: list[WebhookDelivery] = []
    with transaction.atomic():
        rows = _due(now).exclude(pk__in=exclude).select_related("webhook").order_by("next_attempt_at", "id")
        if connection.features.has_select_for_update_skip_locked:
            of = ("self",) if connection.features.has_select_for_update_of else ()
            rows = rows.select_for_update(skip_locked=True, of=of)
        for row in rows[:limit]:
            token, until = uuid.uuid4(), now + timedelta(seconds=LEASE_S)
            # Compare-and-set on the token read: where rows are not locked, a claim that got in
            # first changed it, and this one matches nothing.
            won = _due(now).filter(pk=row.pk, lease_token=row.lease_token).update(lease_token=token,
                                                                                  leased_until=until)
            if won:
                row.lease_token, row.leased_until = token, until
                claimed.append(row)
    return claimed


def record(delivery: WebhookDelivery, outcome: Outcome, *, now: datetime | None = None) -> WebhookDelivery:
    """Store one attempt's outcome and schedule the next one (or give up); only the lease holder may.

    A worker whose lease expired and was taken by another records nothing (the row is returned
    as the database has it), so a late outcome never overwrites a newer one.
    """
    now = now or timezone.now()
    attempts = delivery.attempts + 1
    changes: dict[str, object] = {
        "attempts": attempts, "last_attempt_at": now, "last_status_code": outcome.status_code,
        "last_error": outcome.error[:ERROR_CHARS], "leased_until": None,
    }
    if outcome.delivered:
        changes.update(status=DeliveryStatus.DELIVERED, delivered_at=now)
    elif outcome.permanent or attempts >= MAX_ATTEMPTS:
        changes.update(status=DeliveryStatus.FAILED)
    else:
        changes.update(next_attempt_at=now + timedelta(seconds=BACKOFF_S[attempts - 1]))
    with transaction.atomic():
        held = WebhookDelivery.objects.filter(pk=delivery.pk, lease_token=delivery.lease_token,
                                              status=DeliveryStatus.PENDING).update(**changes)
        if held and outcome.receiver_down and "next_attempt_at" in changes:
            # One request per backoff step to a receiver that is down, not one per queued delivery.
            WebhookDelivery.objects.filter(
                _unleased(now), webhook_id=delivery.webhook_id, status=DeliveryStatus.PENDING,
                next_attempt_at__lt=changes["next_attempt_at"],
            ).exclude(pk=delivery.pk).update(next_attempt_at=changes["next_attempt_at"])
    if not held:
        log.warning("webhook delivery %s: lease lost before the outcome was recorded; left as it is",
                    delivery.delivery_id)
        fresh = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery.pk).first()
        return fresh or delivery
    for name, value in changes.items():
        setattr(delivery, name, value)
    return delivery


def deliver_due(*, limit: int | None = None, now: datetime | None = None) -> list[WebhookDelivery]:
    """Attempt every due delivery once (at most `limit`), each under its own lease; returns them."""
    attempted: list[WebhookDelivery] = []
    seen: set[int] = set()
    while limit is None or len(attempted) < limit:
        claimed = claim(1, now=now, exclude=seen)
        if not claimed:
            break
        delivery = claimed[0]
        seen.add(delivery.pk)
        deadline = time.monotonic() + min(ATTEMPT_S, LEASE_S / 2)  # ends well inside the lease
        attempted.append(record(delivery, send(delivery, deadline=deadline), now=now))
    return attempted


def next_due_in(*, now: datetime | None = None) -> float | None:
    """Seconds until a pending delivery may be claimed (its retry time or the end of its lease)."""
    now = now or timezone.now()
    nxt = (WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, webhook__active=True)
           .annotate(claimable_at=Greatest("next_attempt_at", Coalesce("leased_until", "next_attempt_at")))
           .order_by("claimable_at").values_list("claimable_at", flat=True).first())
    return None if nxt is None else max(0.0, (nxt - now).total_seconds())


# ------------------------------------------------------------------------------ background thread
_wakeup = threading.Event()
_thread: threading.Thread | None = None
_thread_lock = threading.Lock()


def thread_enabled() -> bool:
    return bool(getattr(settings, "WEBHOOKS_DELIVERY_THREAD", True))


def wake() -> None:
    """Run after commit: make sure this process's sender thread runs and looks at the outbox now."""
    if not thread_enabled():
        return
    _wakeup.set()  # before _ensure_thread: a thread deciding to exit sees it (see _run_forever)
    _ensure_thread()


def _ensure_thread() -> None:
    global _thread
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _thread = threading.Thread(target=_run_forever, name="webhook-delivery", daemon=True)
            _thread.start()


def _run_forever() -> None:
    """Send what is due, sleep until the next retry or a wake-up; exit when nothing is pending."""
    global _thread
    while not apps.ready:  # started from AppConfig.ready(): let start-up finish before any query
        time.sleep(0.2)
    while True:
        _wakeup.clear()
        wait: float | None
        try:
            deliver_due()
            wait = next_due_in()
        except Exception:  # the rows stay pending and are retried
            log.exception("webhook delivery failed")
            wait = IDLE_POLL_S
        finally:
            close_old_connections()
        if wait is None:
            with _thread_lock:
                if not _wakeup.is_set():
                    _thread = None
                    connection.close()
                    return
            continue
        _wakeup.wait(min(max(wait, 0.5), IDLE_POLL_S))


def server_program(argv: list[str]) -> str:
    """'daphne' for `daphne ...` and `python -m daphne ...` alike; 'manage.py' for manage.py."""
    first = argv[0] if argv else ""
    name = os.path.basename(first)
    if name == "__main__.py":  # python -m <package>
        name = os.path.basename(os.path.dirname(first))
    return name


def start_if_serving() -> None:
    """Start the sender thread when this process is a server (so retries continue after a restart)."""
    program = server_program(sys.argv)
    runserver = program == "manage.py" and "runserver" in sys.argv[1:2]
    if runserver and "--noreload" not in sys.argv and os.environ.get("RUN_MAIN") != "true":
        return  # the autoreloader's parent process serves nothing
    if (program in SERVER_PROGRAMS or runserver) and thread_enabled():
        _ensure_thread()
