"""What every outbox row carries for registry/outbox.py's mechanics: attempts, backoff and lease.

The e-mail outbox (registry/models/mail.py) and the webhook deliveries (webhooks/models.py) are
both sent after commit by whichever worker holds a row's lease; these fields are that protocol,
defined once so the two tables cannot drift apart. Each table keeps its own status choices and
its own outcome fields (a sent time, an HTTP status).
"""

from __future__ import annotations

from django.db import models
from django.utils import timezone
from django.utils.translation import gettext_lazy as _


class OutboxRow(models.Model):
    attempts = models.PositiveIntegerField(_("attempts"), default=0)
    next_attempt_at = models.DateTimeField(_("next attempt at"), default=timezone.now)
    last_attempt_at = models.DateTimeField(_("last attempt at"), null=True, blank=True)
    last_error = models.TextField(_("last error"), blank=True)
    # The lease of the worker sending it now: only the holder of `lease_token` records the outcome,
    # and nobody else claims the row before `leased_until` (longer than one attempt may take).
    lease_token = models.UUIDField(_("lease token"), null=True, blank=True, editable=False)
    leased_until = models.DateTimeField(_("leased until"), null=True, blank=True, editable=False)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        abstract = True
