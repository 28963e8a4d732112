"""The append-only audit log and the change log that drives notifications."""

from __future__ import annotations

from typing import Any

from django.apps import apps
from django.conf import settings
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.errors import ImmutableVersionError
from registry.models.managers import GuardedManager, InsertOnly


def _entry_kind_name(kind: str) -> Any:
    """'template' -> the verbose name of the entry model whose `kind` it is (registry.kinds, which
    maps the kinds, sits above the models); an unknown kind as given."""
    for model in apps.get_app_config("registry").get_models():
        if getattr(model, "kind", None) == kind and isinstance(kind, str):
            return model._meta.verbose_name
    return kind


class AuditAction(models.TextChoices):
    CREATE = "create", _("Created")
    EDIT = "edit", _("Edited draft")
    DELETE = "delete", _("Deleted")
    PUBLISH = "publish", _("Published")
    LABEL_MOVE = "label_move", _("Moved label")
    ROLLBACK = "rollback", _("Rolled back")
    INCIDENT_ROLLBACK = "incident_rollback", _("Incident rollback of a protected label by one publisher")
    ARCHIVE = "archive", _("Archived")
    UNARCHIVE = "unarchive", _("Restored from archive")
    RESTORE_DRAFT = "restore_draft", _("Draft restored from a version")
    REVIEW_REQUESTED = "review_requested", _("Requested a review")
    REVIEW_APPROVED = "review_approved", _("Approved a review")
    REVIEW_REJECTED = "review_rejected", _("Rejected a review")
    REVIEW_WITHDRAWN = "review_withdrawn", _("Withdrew a review request")
    REVIEW_SUPERSEDED = "review_superseded", _("A review request was superseded")
    OVERRIDE = "override", _("Emergency override of a protected label")
    ROLLOUT_CHANGED = "rollout_changed", _("Changed a percentage rollout")
    CLIENT_CHANGED = "client_changed", _("Created, changed or revoked an MCP client, or issued its token")
    REVIEW_COMMENTED = "review_commented", _("Commented on a review request")
    CHANGES_REQUESTED = "changes_requested", _("Asked for changes to a review request")
    REVIEW_STALE = "review_stale", _("A review request went stale: the draft changed")
    RELEASE_RESCHEDULED = "release_rescheduled", _("Moved the go-live time of a scheduled release")
    RELEASE_CANCELLED = "release_cancelled", _("Cancelled a scheduled release")
    RELEASE_WENT_LIVE = "release_went_live", _("A scheduled release went live")
    RELEASE_FAILED = "release_failed", _("A scheduled release failed")
    FOLDER_MOVED = "folder_moved", _("Moved to another folder")
    FOLDER_OWNER_CHANGED = "folder_owner", _("Set, changed or removed the team owning a folder")
    REFUSED = "refused", _("Refused: the change was not allowed")


class AppendOnlyQuerySet(InsertOnly):
    overwrite_refused = "The audit log is append-only."


    def delete(self):
        raise ImmutableVersionError("The audit log is append-only.")


class AuditManager(GuardedManager.from_queryset(AppendOnlyQuerySet)):  # type: ignore[misc]
    """AppendOnlyQuerySet's rules, in data migrations too (registry/models/managers.py)."""


class AuditEntry(models.Model):
    """Who did what to which entry, when, why, and exactly what changed."""

    created_at = models.DateTimeField(_("created at"), auto_now_add=True, db_index=True)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("actor"), null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    actor_name = models.CharField(
        _("actor name"), max_length=150, help_text=_("User name, or the tool that acted."),
    )
    action = models.CharField(_("action"), max_length=20, choices=AuditAction.choices, db_index=True)
    entry_kind = models.CharField(_("entry kind"), max_length=20, db_index=True)
    entry_key = models.CharField(_("entry key"), max_length=2048)
    entry_id = models.BigIntegerField(_("entry id"), null=True, blank=True)
    label = models.CharField(_("label"), max_length=40, blank=True)
    from_version = models.PositiveIntegerField(_("from version"), null=True, blank=True)
    to_version = models.PositiveIntegerField(_("to version"), null=True, blank=True)
    changes = models.JSONField(
        _("changes"), default=list, blank=True, help_text=_("Field-level diff: [{field, before, after}]."),
    )
    note = models.TextField(_("note"), blank=True)

    objects = AuditManager()

    class Meta:
        verbose_name = _("audit entry")
        ordering = ["-created_at", "-id"]
        verbose_name_plural = _("audit entries")
        permissions = [("export_auditentry", _("Can export the audit log"))]

    def __str__(self) -> str:
        """The title of an entry's page: the action and kind in the reader's language, not their codes."""
        return (f"{self.created_at:%Y-%m-%d %H:%M} {self.actor_name} {self.get_action_display()} "
                f"{_entry_kind_name(self.entry_kind)} {self.entry_key}")

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ImmutableVersionError("Audit entries cannot be changed.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableVersionError("Audit entries cannot be deleted.")


class ChangeLogEntry(models.Model):
    """One served-content change, written in the changing transaction.

    Processes that did not make the change (another worker, a management command) catch up
    from this table, so no change is missed even if the fast path (channel layer) was down.
    """

    created_at = models.DateTimeField(_("created at"), auto_now_add=True, db_index=True)
    entry_kind = models.CharField(_("entry kind"), max_length=20)  # prompt, resource, template
    entry_key = models.CharField(_("entry key"), max_length=2048)
    label = models.CharField(
        _("label"), max_length=40, blank=True,
        help_text=_("Label whose served content changed; blank = all."),
    )
    list_changed = models.BooleanField(
        _("list changed"), default=False, help_text=_("The set of listed entries or their metadata changed."),
    )

    class Meta:
        verbose_name = _("change log entry")
        verbose_name_plural = _("change log entries")
        ordering = ["id"]

    def __str__(self) -> str:
        return f"#{self.pk} {self.entry_kind} {self.entry_key} [{self.label or 'all'}]"
