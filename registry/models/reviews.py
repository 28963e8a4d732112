"""Four-eyes review requests for protected labels, and percentage rollouts of a candidate version.

Both refer to their entry by kind + id + key (like the audit log) rather than a foreign key,
because prompts, resources and templates live in three tables.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.models.base import ServedQuerySet, label_name_validator
from registry.models.managers import GuardedManager


class ReviewStatus(models.TextChoices):
    PENDING = "pending", _("Waiting for a reviewer")
    APPROVED = "approved", _("Approved")
    REJECTED = "rejected", _("Rejected")
    WITHDRAWN = "withdrawn", _("Withdrawn")
    SUPERSEDED = "superseded", _("Superseded (the label moved first)")
    SCHEDULED = "scheduled", _("Approved: goes live at its scheduled time")
    FAILED = "failed", _("Approved, but its scheduled release failed")


# Requests still in play: waiting for a decision, or approved and waiting for their go-live time.
OPEN_STATUSES = (ReviewStatus.PENDING, ReviewStatus.SCHEDULED)


class ReviewRequest(models.Model):
    """An editor's request to serve something on a (protected) label; a different publisher decides.

    Either the draft as it was at request time (`content_hash` + `snapshot`; approving publishes
    it as the next version) or an existing `version_number` (approving points the label at it).
    `base_version` is what the label served when the request was made: if the label moved since,
    the request is stale and cannot be approved.
    """

    entry_kind = models.CharField(_("entry kind"), max_length=20, db_index=True)
    entry_id = models.BigIntegerField(_("entry id"))
    entry_key = models.CharField(_("entry key"), max_length=2048)
    label = models.CharField(_("label"), max_length=40, validators=[label_name_validator])
    content_hash = models.CharField(
        _("content hash"), max_length=64, blank=True,
        help_text=_("Of the draft, when the draft is requested."),
    )
    snapshot = models.JSONField(
        _("snapshot"), null=True, blank=True, help_text=_("The draft at request time."),
    )
    version_number = models.PositiveIntegerField(
        _("version number"), null=True, blank=True, help_text=_("An existing version to serve."),
    )
    base_version = models.PositiveIntegerField(
        _("base version"), null=True, blank=True, help_text=_("What the label served at request time."),
    )
    percent = models.PositiveSmallIntegerField(
        _("percent"), null=True, blank=True,
        help_text=_("Set: approve a percentage rollout of the version instead of a full move."),
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("requested by"), null=True, blank=True,
        on_delete=models.SET_NULL, related_name="+",
    )
    requested_by_name = models.CharField(_("requested by name"), max_length=150)
    note = models.TextField(_("note"), help_text=_("What should be released and why."))
    status = models.CharField(
        _("status"), max_length=20, choices=ReviewStatus.choices, default=ReviewStatus.PENDING, db_index=True,
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("decided by"), null=True, blank=True,
        on_delete=models.SET_NULL, related_name="+",
    )
    decided_by_name = models.CharField(_("decided by name"), max_length=150, blank=True)
    decision_comment = models.TextField(_("decision comment"), blank=True)
    result_version = models.PositiveIntegerField(
        _("result version"), null=True, blank=True, help_text=_("The version the approval served."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    decided_at = models.DateTimeField(_("decided at"), null=True, blank=True)
    changes_requested_at = models.DateTimeField(
        _("changes requested at"), null=True, blank=True,
        help_text=_("When a reviewer last asked for changes; the request stays open until it is decided."),
    )
    went_stale_at = models.DateTimeField(
        _("went stale at"), null=True, blank=True,
        help_text=_("When a change of the draft first made the request stale (its requester was told)."),
    )
    previous = models.ForeignKey(
        "self", verbose_name=_("asks again"), null=True, blank=True, on_delete=models.SET_NULL, related_name="+",
        help_text=_("The earlier request this one asks again, with the current draft (its discussion continues here)."),
    )

    class Meta:
        verbose_name_plural = _("review requests")
        ordering = ["-created_at", "-id"]
        verbose_name = _("review request")
        permissions = [
            ("override_protected_labels",
             "Can move protected labels without an approved review (emergency override, audited)"),
        ]

    def __str__(self) -> str:
        return f"#{self.pk} {self.entry_kind} {self.entry_key} → {self.label}: {self.what}"

    @property
    def what(self) -> str:
        target = f"v{self.version_number}" if self.version_number is not None else "the draft"
        if self.percent is not None:
            return f"{target} to {self.percent}% of clients"
        return target

    @property
    def what_text(self) -> str:
        """`what` in the reader's language, for the admin (`what` itself stays English: audit notes use it)."""
        from django.utils.translation import gettext

        target = (gettext("v%(number)s") % {"number": self.version_number} if self.version_number is not None
                  else gettext("the draft"))
        if self.percent is not None:
            return gettext("%(target)s to %(percent)s%% of clients") % {"target": target, "percent": self.percent}
        return target

    @property
    def is_pending(self) -> bool:
        return self.status == ReviewStatus.PENDING

    @property
    def is_open(self) -> bool:
        """Waiting for a decision or for its go-live time: it may still be discussed."""
        return self.status in OPEN_STATUSES


class RolloutQuerySet(ServedQuerySet):
    served_fields = frozenset(
        {"entry_kind", "entry_id", "entry_key", "label", "candidate_version", "percent"},
    )


class RolloutManager(GuardedManager.from_queryset(RolloutQuerySet)):  # type: ignore[misc]
    """RolloutQuerySet's rules, in data migrations too (registry/models/managers.py)."""


class Rollout(models.Model):
    """A candidate version served to `percent`% of the clients of one label of one entry.

    Which clients: a stable hash of the client's name and the entry key (registry.release.rollouts.
    stable_bucket), so a client keeps its version until the percentage changes. Anonymous
    callers always get the label's own version. The row exists only while the rollout runs:
    100% moves the label to the candidate and deletes it, 0% deletes it.
    """

    entry_kind = models.CharField(_("entry kind"), max_length=20)
    entry_id = models.BigIntegerField(_("entry id"))
    entry_key = models.CharField(_("entry key"), max_length=2048)
    label = models.CharField(_("label"), max_length=40, validators=[label_name_validator])
    candidate_version = models.PositiveIntegerField(_("candidate version"))
    percent = models.PositiveSmallIntegerField(_("percent"))
    base_version = models.PositiveIntegerField(
        _("base version"), null=True, blank=True,
        help_text=_("What the label served when the rollout started; its authority covers only that."),
    )
    authority = models.CharField(
        _("authority"),
        max_length=200, blank=True,
        help_text=_("Why a protected label may run this candidate: 'review #N' or 'override: reason'."),
    )
    note = models.TextField(_("note"), blank=True)
    started_at = models.DateTimeField(_("started at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("updated by"), null=True, blank=True,
        on_delete=models.SET_NULL, related_name="+",
    )
    updated_by_name = models.CharField(_("updated by name"), max_length=150)

    objects = RolloutManager()

    class Meta:
        verbose_name = _("rollout")
        verbose_name_plural = _("rollouts")
        ordering = ["entry_kind", "entry_key", "label"]
        constraints = [
            models.UniqueConstraint(fields=["entry_kind", "entry_id", "label"], name="one_rollout_per_label"),
            models.CheckConstraint(condition=models.Q(percent__lte=100), name="rollout_percent_at_most_100"),
        ]

    def __str__(self) -> str:
        return f"{self.entry_kind} {self.entry_key} [{self.label}]: v{self.candidate_version} to {self.percent}%"


def rollout_diff(before: tuple[int | None, int], after: tuple[int | None, int]) -> list[dict[str, Any]]:
    """The audited changes of a rollout going from (candidate version, percent) `before` to
    `after`; no rollout is (None, 0). The one definition every path audits with (the service,
    a label move that ends a rollout, a plain ORM save), so an auditor sees which candidate a
    change started, switched or ended, not only a share."""
    changes = []
    if before[0] != after[0]:
        changes.append({"field": "candidate_version", "before": before[0], "after": after[0]})
    if before[1] != after[1] or not changes:
        changes.append({"field": "percent", "before": before[1], "after": after[1]})
    return changes
