"""The e-mail outbox: one message per (audit event, recipient), written in the event's transaction.

`registry/mail/` decides who is told what when the event happens, and renders each message in its
recipient's language when it is sent (after commit, so it shows the request as the event left
it, approvals served and all); the worker sends it (registry/outbox.py mechanics, as webhooks). The unique key on
(audit row, recipient) makes "never twice for one event" structural: however many workers run,
one row exists, and one lease holder sends it.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.models.audit import AuditEntry
from registry.models.outbox import OutboxRow


class MailKind(models.TextChoices):
    """What a person may turn off in their preferences, one kind at a time."""

    REVIEW_REQUESTED = "review_requested", _("Review requests I may decide")
    REVIEW_OUTCOME = "review_outcome", _("What becomes of my requests: approved, rejected, changes requested, "
                                         "stale or superseded")
    COMMENTS = "comments", _("New comments in review discussions I take part in")
    INCIDENTS = "incidents", _("Incident rollbacks by one publisher")
    SCHEDULED = "scheduled", _("Scheduled releases I requested or approved: live, failed, cancelled or moved")


class MailStatus(models.TextChoices):
    PENDING = "pending", _("Pending")
    SENT = "sent", _("Sent")
    FAILED = "failed", _("Failed (gave up)")


class MailMessage(OutboxRow):
    """One e-mail to one person about one audited event (rendered and addressed when it is sent)."""

    audit = models.ForeignKey(AuditEntry, verbose_name=_("audit entry"), on_delete=models.PROTECT,
                              related_name="+", help_text=_("The event the message tells of."))
    review = models.ForeignKey("registry.ReviewRequest", verbose_name=_("review request"), null=True, blank=True,
                               on_delete=models.PROTECT, related_name="+")
    recipient = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("recipient"), on_delete=models.CASCADE,
                                  related_name="+")
    kind = models.CharField(_("kind"), max_length=20, choices=MailKind.choices)
    # What was sent, kept once it is: the address, language and text as rendered for the recipient.
    to = models.EmailField(_("to"), blank=True)
    language = models.CharField(_("language"), max_length=15, blank=True)
    subject = models.CharField(_("subject"), max_length=250, blank=True)
    text = models.TextField(_("plain text"), blank=True)
    html = models.TextField(_("HTML"), blank=True)
    status = models.CharField(_("status"), max_length=10, choices=MailStatus.choices, default=MailStatus.PENDING)
    sent_at = models.DateTimeField(_("sent at"), null=True, blank=True)

    class Meta:
        verbose_name = _("e-mail message")
        verbose_name_plural = _("e-mail messages")
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "next_attempt_at"], name="mail_message_due")]
        constraints = [
            models.UniqueConstraint(fields=["audit", "recipient"], name="one_mail_per_event_and_recipient"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} → {self.to} ({self.status})"
