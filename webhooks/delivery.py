"""Sending the outbox: signed POSTs, one lease per delivery, retried with exponential backoff.

A worker (a server process's sender thread, ``manage.py registry_worker`` or ``deliver_webhooks``)
claims ONE due delivery at a time in a short transaction (``select_for_update(skip_locked=True)``
where the database has it, and a compare-and-set on the lease token everywhere: registry/outbox.py,
the mechanics every outbox shares) and sends it at once. The
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
import time
from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from registry import outbox
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


def _due(now: datetime):
    return WebhookDelivery.objects.filter(outbox.unleased(now), status=DeliveryStatus.PENDING,
                                          next_attempt_at__lte=now, webhook__active=True)


def claim(limit: int = 1, *, now: datetime | None = None, exclude: set[int] | frozenset[int] = frozenset()
          ) -> list[WebhookDelivery]:
    """Lease up to `limit` due deliveries to this worker; each comes with its new `lease_token`."""
    return outbox.claim(_due, lease_s=LEASE_S, limit=limit, now=now, exclude=exclude, related=("webhook",))


def record(delivery: WebhookDelivery, outcome: Outcome, *, now: datetime | None = None) -> WebhookDelivery:
    """Store one attempt's outcome and schedule the next one (or give up); only the lease holder may.

    A worker whose lease expired and was taken by another records nothing (the row is returned
    as the database has it), so a late outcome never overwrites a newer one.
    """
    now = now or timezone.now()
    changes = outbox.outcome_changes(delivery, sent=outcome.delivered, permanent=outcome.permanent,
                                     error=outcome.error, backoff_s=BACKOFF_S, sent_status=DeliveryStatus.DELIVERED,
                                     sent_field="delivered_at", now=now)
    changes["last_status_code"] = outcome.status_code
    with transaction.atomic():
        held = outbox.record_outcome(delivery, changes)
        if held and outcome.receiver_down and "next_attempt_at" in changes:
            # One request per backoff step to a receiver that is down, not one per queued delivery.
            WebhookDelivery.objects.filter(
                outbox.unleased(now), webhook_id=delivery.webhook_id, status=DeliveryStatus.PENDING,
                next_attempt_at__lt=changes["next_attempt_at"],
            ).exclude(pk=delivery.pk).update(next_attempt_at=changes["next_attempt_at"])
    if not held:
        log.warning("webhook delivery %s: lease lost before the outcome was recorded; left as it is",
                    delivery.delivery_id)
        fresh = WebhookDelivery.objects.select_related("webhook").filter(pk=delivery.pk).first()
        return fresh or delivery
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
    return outbox.next_claimable_in(
        WebhookDelivery.objects.filter(status=DeliveryStatus.PENDING, webhook__active=True), now=now)


# ------------------------------------------------------------------------------ background thread
def thread_enabled() -> bool:
    return bool(getattr(settings, "WEBHOOKS_DELIVERY_THREAD", True))


sender = outbox.SenderThread("webhook-delivery", work=lambda: deliver_due(), next_due=lambda: next_due_in(),
                             enabled=thread_enabled, idle_poll_s=IDLE_POLL_S)
server_program = outbox.server_program


def wake() -> None:
    """Run after commit: make sure this process's sender thread runs and looks at the outbox now."""
    sender.wake()


def start_if_serving() -> None:
    """Start the sender thread when this process is a server (so retries continue after a restart)."""
    sender.start_if_serving()


def worker_pass(sender: object = None, **kwargs: object) -> float | None:
    """registry.signals.worker_pass: deliver what is due; seconds until the next delivery is due."""
    deliver_due()
    return next_due_in()
