"""Sending the e-mail outbox: one lease per message, SMTP (or EMAIL_BACKEND) outside any
transaction, retried with backoff when the server fails; never from a web request.

`manage.py registry_worker` sends what is due on every pass. Server processes also send in a
background thread, woken after the commit that queued mail (REGISTRY["MAIL_DELIVERY_THREAD"],
on by default), so a person acting in the admin is told within a second where no worker runs
yet (`make run`); other commands leave it to them. Both may run at once: the lease
(registry/outbox.py, shared with webhooks) decides who sends a message, and only its holder
records the outcome, so a message is sent once.

A server that is down or refuses a message for now (a 4xx reply: greylisting, a full mailbox)
leaves it pending for the next step of the backoff; an address refused for good (5xx) fails it at
once; after the last attempt it is marked failed. The messages of a batch go one by one, each
after its lease is renewed, so a slow server never lets a lease run out on a message not yet sent
(another worker would send it too). The recipients' preferences are read again for each batch.
The event itself (the release, the review) was committed before anything was sent and is never
touched by a failure here.
"""

from __future__ import annotations

import logging
import smtplib
import sys
from datetime import datetime

from django.conf import settings
from django.core.mail import EmailMultiAlternatives, get_connection
from django.db import transaction
from django.utils import timezone

from registry import outbox
from registry.conf import registry_settings
from registry.mail.compose import compose
from registry.mail.recipients import kinds_off
from registry.models import MailMessage, MailStatus

log = logging.getLogger(__name__)

# Wait after attempt 1, 2, ...; after the last one the message is marked failed (about 17 hours in all).
BACKOFF_S = (60, 300, 900, 3600, 3 * 3600, 12 * 3600)
# A claimed message is invisible to other workers this long: far more than one SMTP session may take
# (each socket operation is bounded by EMAIL_TIMEOUT).
LEASE_S = 300
BATCH = 20  # messages claimed together and sent over one SMTP connection


def _due(now: datetime):
    return MailMessage.objects.filter(outbox.unleased(now), status=MailStatus.PENDING, next_attempt_at__lte=now)


def claim(limit: int = BATCH, *, now: datetime | None = None, exclude: frozenset[int] | set[int] = frozenset()
          ) -> list[MailMessage]:
    """Lease up to `limit` due messages to this worker."""
    return outbox.claim(_due, lease_s=LEASE_S, limit=limit, now=now, exclude=exclude,
                        related=("audit", "review", "recipient"))


def _permanent(exc: BaseException) -> bool:
    """Retrying cannot help: the server refused the address itself for good (a 5xx reply). A 4xx
    refusal (greylisting, a full mailbox, a busy server) is temporary and retried with the backoff."""
    if not isinstance(exc, smtplib.SMTPRecipientsRefused):
        return False
    codes = [reply[0] for reply in exc.recipients.values() if isinstance(reply, tuple) and reply]
    return bool(codes) and all(isinstance(code, int) and code >= 500 for code in codes)


def _short(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:outbox.ERROR_CHARS]


def record(message: MailMessage, *, sent: bool, error: str = "", permanent: bool = False,
           now: datetime | None = None) -> MailMessage:
    """Store one attempt's outcome (only while this worker holds the lease)."""
    now = now or timezone.now()
    changes = outbox.outcome_changes(message, sent=sent, permanent=permanent, error=error, backoff_s=BACKOFF_S,
                                     sent_status=MailStatus.SENT, sent_field="sent_at", now=now)
    if sent:
        changes.update(to=message.to, language=message.language, subject=message.subject, text=message.text,
                       html=message.html)
    with transaction.atomic():
        held = outbox.record_outcome(message, changes)
    if not held:
        log.warning("e-mail %s: lease lost before the outcome was recorded; left as it is", message.pk)
        return MailMessage.objects.filter(pk=message.pk).first() or message
    return message


def _email(message: MailMessage, connection) -> EmailMultiAlternatives:
    composed = compose(message)
    message.to, message.language = message.recipient.email, composed.language
    message.subject, message.text, message.html = composed.subject, composed.text, composed.html
    email = EmailMultiAlternatives(composed.subject, composed.text, settings.DEFAULT_FROM_EMAIL, [message.to],
                                   connection=connection,
                                   headers={"Auto-Submitted": "auto-generated",
                                            "X-Registry-Event": message.audit.action})
    email.attach_alternative(composed.html, "text/html")
    return email


def send_due(*, now: datetime | None = None, limit: int | None = None) -> list[MailMessage]:
    """Attempt every due message once (at most `limit`), in batches over one connection each."""
    attempted: list[MailMessage] = []
    seen: set[int] = set()
    while limit is None or len(attempted) < limit:
        batch = claim(BATCH if limit is None else min(BATCH, limit - len(attempted)), now=now, exclude=seen)
        if not batch:
            break
        seen.update(message.pk for message in batch)
        attempted += _send_batch(batch, now=now)
    return attempted


def _send_batch(batch: list[MailMessage], *, now: datetime | None) -> list[MailMessage]:
    connection = get_connection(fail_silently=False)
    try:
        connection.open()
    except Exception as exc:  # the server is down: every message of the batch waits for the next step
        return [record(message, sent=False, error=_short(exc), now=now) for message in batch]
    done = []
    off = kinds_off(message.recipient_id for message in batch)
    try:
        for message in batch:
            if not outbox.renew(message, lease_s=LEASE_S, now=now):
                # The lease ran out while earlier messages were sent and another worker holds it now.
                log.warning("e-mail %s: lease lost before it was sent; left to its holder", message.pk)
                continue
            if not message.recipient.is_active or not message.recipient.email:
                done.append(record(message, sent=False, error="The recipient has no address or is inactive.",
                                   permanent=True, now=now))
                continue
            if message.kind in off.get(message.recipient_id, ()):
                done.append(record(message, sent=False, permanent=True, now=now,
                                   error="The recipient turned this kind of e-mail off before it was sent."))
                continue
            try:
                _email(message, connection).send()
            except Exception as exc:  # one message's failure is its own; the others still go
                log.warning("e-mail %s to %s not sent: %s", message.pk, message.recipient_id, _short(exc))
                done.append(record(message, sent=False, error=_short(exc), permanent=_permanent(exc), now=now))
            else:
                done.append(record(message, sent=True, now=now))
    finally:
        try:
            connection.close()
        except Exception:  # a server gone away during QUIT changes nothing that was sent
            log.debug("closing the SMTP connection failed", exc_info=True)
    return done


def next_due_in(*, now: datetime | None = None) -> float | None:
    """Seconds until a pending message may be claimed."""
    return outbox.next_claimable_in(MailMessage.objects.filter(status=MailStatus.PENDING), now=now)


def thread_enabled() -> bool:
    """On in server processes (unless REGISTRY["MAIL_DELIVERY_THREAD"] is off). A short-lived command
    (an import, a shell) does not send: it would exit in the middle of an SMTP session and leave the
    message leased, and so late, for LEASE_S; the worker or a server sends what it queued."""
    return bool(registry_settings.MAIL_DELIVERY_THREAD) and outbox.is_server_process(list(sys.argv))


sender = outbox.SenderThread("mail-delivery", work=lambda: send_due(), next_due=lambda: next_due_in(),
                             enabled=thread_enabled)


def wake() -> None:
    """Run after commit: this process's sender thread looks at the outbox now."""
    sender.wake()
