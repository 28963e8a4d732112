"""audit_recorded -> e-mail outbox rows in the auditing transaction; sending waits for commit.

Who is told is decided now, as the event happens (`recipients`); what they read is rendered when
it is sent. A rolled-back transaction takes its rows with it. The unique key on (audit row,
recipient) means an event can never queue a second message for one person.
"""

from __future__ import annotations

from typing import Any

from django.db import transaction

from registry.mail.recipients import ACTION_KINDS, recipients
from registry.models import AuditEntry, MailMessage


def audit_recorded(sender: Any, entry: AuditEntry, review: Any = None, **kwargs: Any) -> None:
    if entry.action not in ACTION_KINDS:
        return
    told = recipients(entry, review)
    if not told:
        return
    MailMessage.objects.bulk_create(
        [MailMessage(audit=entry, review=review, recipient=user, kind=kind) for user, kind in told],
        ignore_conflicts=True)
    from registry.mail import sending

    transaction.on_commit(sending.wake)
