"""Which audit actions become which webhook events, and the JSON body each event carries."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.models import AuditEntry


class Event(models.TextChoices):
    VERSION_PUBLISHED = "version.published", _("Version published")
    LABEL_MOVED = "label.moved", _("Label moved (incl. rollbacks and overrides)")
    ROLLOUT_CHANGED = "rollout.changed", _("Rollout changed")
    REVIEW_REQUESTED = "review.requested", _("Review requested")
    REVIEW_APPROVED = "review.approved", _("Review approved")
    REVIEW_REJECTED = "review.rejected", _("Review rejected")
    REVIEW_SUPERSEDED = "review.superseded", _("Review superseded (the label moved first)")


# Audit action (registry.models.AuditAction value) -> event. Actions not listed (draft edits,
# archive, ...) send nothing.
ACTION_EVENTS: dict[str, str] = {
    "publish": Event.VERSION_PUBLISHED,
    "label_move": Event.LABEL_MOVED,
    "rollback": Event.LABEL_MOVED,
    "override": Event.LABEL_MOVED,
    "incident_rollback": Event.LABEL_MOVED,  # one publisher alone rolled a protected label back
    "rollout_changed": Event.ROLLOUT_CHANGED,
    "review_requested": Event.REVIEW_REQUESTED,
    "review_approved": Event.REVIEW_APPROVED,
    "review_rejected": Event.REVIEW_REJECTED,
    "review_superseded": Event.REVIEW_SUPERSEDED,
}


# Notes are free text of any length; a webhook carries the start of one (the audit log has it all),
# so one long note cannot make every delivery of it megabytes large.
NOTE_CHARS = 2000


def event_for(action: str) -> str | None:
    return ACTION_EVENTS.get(action)


def payload_for(event: str, audit: AuditEntry) -> dict[str, Any]:
    """The event body: what happened to which entry, by whom; the audit entry id links to the log
    (where a note longer than NOTE_CHARS is kept whole)."""
    return {
        "event": event,
        "occurred_at": audit.created_at.isoformat(),
        "audit_id": audit.pk,
        "action": audit.action,
        "actor": audit.actor_name,
        "entry": {"kind": audit.entry_kind, "key": audit.entry_key, "id": audit.entry_id},
        "label": audit.label or None,
        "from_version": audit.from_version,
        "to_version": audit.to_version,
        "note": audit.note[:NOTE_CHARS],
        "note_truncated": len(audit.note) > NOTE_CHARS,
    }
