"""Scheduled releases: an approved review request that goes live at a set time.

The approval is made (and checked) when the publisher approves; `registry_worker` carries it out
at `go_live_at` through the same services as an immediate approval (registry/release/schedules.py).
A request has at most one release scheduled at a time; cancelled, failed and done ones stay as
its history.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.models.reviews import ReviewRequest


class ScheduleStatus(models.TextChoices):
    SCHEDULED = "scheduled", _("Scheduled")
    DONE = "done", _("Went live")
    FAILED = "failed", _("Failed")
    CANCELLED = "cancelled", _("Cancelled")


class ScheduledRelease(models.Model):
    """What an approval asked for, to be done at `go_live_at` (stored in UTC)."""

    review = models.ForeignKey(ReviewRequest, verbose_name=_("review request"), on_delete=models.PROTECT,
                               related_name="schedules")
    go_live_at = models.DateTimeField(_("go live at"))
    status = models.CharField(_("status"), max_length=10, choices=ScheduleStatus.choices,
                              default=ScheduleStatus.SCHEDULED)
    scheduled_by = models.ForeignKey(settings.AUTH_USER_MODEL, verbose_name=_("scheduled by"), null=True,
                                     blank=True, on_delete=models.SET_NULL, related_name="+")
    scheduled_by_name = models.CharField(_("scheduled by name"), max_length=150,
                                         help_text=_("The publisher who approved it: the release is theirs."))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    finished_at = models.DateTimeField(_("finished at"), null=True, blank=True)
    finished_by_name = models.CharField(_("finished by name"), max_length=150, blank=True,
                                        help_text=_("Who cancelled it, or the worker that carried it out."))
    outcome = models.TextField(_("outcome"), blank=True, help_text=_("What went live, or why it did not."))
    result_version = models.PositiveIntegerField(_("result version"), null=True, blank=True)
    # An attempt that failed for a reason other than the release's own (an outage, a bug) leaves it
    # scheduled, retried at `retry_at`, so it never holds up the releases due after it.
    attempts = models.PositiveSmallIntegerField(_("failed attempts"), default=0, editable=False)
    retry_at = models.DateTimeField(_("retry at"), null=True, blank=True, editable=False)
    last_error = models.TextField(_("last error"), blank=True, editable=False)

    class Meta:
        verbose_name = _("scheduled release")
        verbose_name_plural = _("scheduled releases")
        ordering = ["go_live_at", "id"]
        indexes = [models.Index(fields=["status", "go_live_at"], name="scheduled_release_due")]
        constraints = [
            models.UniqueConstraint(fields=["review"], condition=models.Q(status="scheduled"),
                                    name="one_scheduled_release_per_review"),
        ]

    def __str__(self) -> str:
        return f"review #{self.review_id} at {self.go_live_at:%Y-%m-%d %H:%M} ({self.status})"

    @property
    def is_scheduled(self) -> bool:
        return self.status == ScheduleStatus.SCHEDULED
