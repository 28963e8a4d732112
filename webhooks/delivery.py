"""Sending the outbox: signed POSTs with a short timeout, retried with exponential backoff.

Deliveries are claimed in a short transaction (``select_for_update(skip_locked=True)`` where the
database has it) and leased by pushing ``next_attempt_at`` forward, so with several workers
(server processes, ``manage.py deliver_webhooks``) each delivery is attempted by one of them.
The HTTP request itself runs outside any transaction and never in a web request: a daemon
thread per server process does it, woken after commit by the receiver.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.apps import apps
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from webhooks.models import DeliveryStatus, WebhookDelivery
from webhooks.signing import sign
from webhooks.validation import allow_loopback, is_link_local_host, is_loopback_host

log = logging.getLogger(__name__)

TIMEOUT_S = 5.0
# Wait after attempt 1, 2, ...; after the last one the delivery is marked failed.
BACKOFF_S = (10, 30, 120, 600, 3600)
MAX_ATTEMPTS = len(BACKOFF_S) + 1
LEASE_S = 60  # a claimed delivery is invisible to other workers this long (longer than one attempt)
BATCH = 20
IDLE_POLL_S = 30.0
USER_AGENT = "mcp-prompt-registry-webhooks/1"
SERVER_PROGRAMS = {"daphne", "uvicorn", "gunicorn", "hypercorn"}


@dataclass
class Outcome:
    delivered: bool
    status_code: int | None = None
    error: str = ""
    permanent: bool = False  # retrying cannot help (e.g. the address resolves to loopback)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    """A redirect could point anywhere, including this server: treat it as a failed delivery."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[override]
        return None


_opener = urllib.request.build_opener(_NoRedirects)


def body_of(delivery: WebhookDelivery) -> bytes:
    return json.dumps(delivery.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _refused_address(url: str) -> str:
    """Why the host must not be contacted ('' if it may): it is, or resolves to, loopback or link-local."""
    host = urlsplit(url).hostname or ""
    try:
        addresses = [host] + [str(info[4][0]) for info in socket.getaddrinfo(host, None)]
    except OSError:
        addresses = [host]  # unresolvable: the POST fails and is retried
    if any(is_link_local_host(a) for a in addresses):
        return "The webhook address resolves to a link-local address; not sent."
    if not allow_loopback() and any(is_loopback_host(a) for a in addresses):
        return "The webhook address resolves to a loopback address; not sent."
    return ""


def send(delivery: WebhookDelivery, *, now: float | None = None) -> Outcome:
    """POST one delivery; never raises."""
    webhook = delivery.webhook
    refused = _refused_address(webhook.url)
    if refused:
        return Outcome(False, error=refused, permanent=True)
    body = body_of(delivery)
    timestamp = str(int(time.time() if now is None else now))
    request = urllib.request.Request(
        webhook.url, data=body, method="POST",
        headers={
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Registry-Event": delivery.event,
            "X-Registry-Delivery": str(delivery.delivery_id),
            "X-Registry-Timestamp": timestamp,
            "X-Registry-Signature": sign(webhook.secret, timestamp, body),
        },
    )
    try:
        with _opener.open(request, timeout=TIMEOUT_S) as response:
            code = response.status
    except urllib.error.HTTPError as exc:
        code = exc.code
        exc.close()
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Outcome(False, error=f"{type(exc).__name__}: {reason}"[:1000])
    if 200 <= code < 300:
        return Outcome(True, status_code=code)
    return Outcome(False, status_code=code, error=f"The receiver answered HTTP {code}.")


def _due(now: datetime):
    return WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, next_attempt_at__lte=now,
                                          webhook__active=True)


def claim(limit: int = BATCH, *, now: datetime | None = None) -> list[WebhookDelivery]:
    """Lease up to `limit` due deliveries to this worker."""
    now = now or timezone.now()
    with transaction.atomic():
        rows = _due(now).select_related("webhook").order_by("next_attempt_at", "id")
        if connection.features.has_select_for_update_skip_locked:
            of = ("self",) if connection.features.has_select_for_update_of else ()
            rows = rows.select_for_update(skip_locked=True, of=of)
        claimed = list(rows[:limit])
        if claimed:
            WebhookDelivery.objects.filter(pk__in=[d.pk for d in claimed]).update(
                next_attempt_at=now + timedelta(seconds=LEASE_S)
            )
    return claimed


def record(delivery: WebhookDelivery, outcome: Outcome, *, now: datetime | None = None) -> WebhookDelivery:
    """Store one attempt's outcome and schedule the next one (or give up)."""
    now = now or timezone.now()
    delivery.attempts += 1
    delivery.last_attempt_at = now
    delivery.last_status_code = outcome.status_code
    delivery.last_error = outcome.error
    if outcome.delivered:
        delivery.status = DeliveryStatus.DELIVERED
        delivery.delivered_at = now
    elif outcome.permanent or delivery.attempts >= MAX_ATTEMPTS:
        delivery.status = DeliveryStatus.FAILED
    else:
        delivery.next_attempt_at = now + timedelta(seconds=BACKOFF_S[delivery.attempts - 1])
    delivery.save(update_fields=["attempts", "last_attempt_at", "last_status_code", "last_error", "status",
                                 "delivered_at", "next_attempt_at"])
    return delivery


def deliver_due(*, limit: int = BATCH, now: datetime | None = None) -> list[WebhookDelivery]:
    """Attempt every due delivery once (in batches of `limit`); returns the deliveries attempted."""
    attempted: list[WebhookDelivery] = []
    seen: set[int] = set()
    while True:
        batch = [d for d in claim(limit, now=now) if d.pk not in seen]
        if not batch:
            return attempted
        for delivery in batch:
            seen.add(delivery.pk)
            attempted.append(record(delivery, send(delivery), now=now))


def next_due_in(*, now: datetime | None = None) -> float | None:
    now = now or timezone.now()
    nxt = (WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, webhook__active=True)
           .order_by("next_attempt_at").values_list("next_attempt_at", flat=True).first())
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
