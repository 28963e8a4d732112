"""What a label serves now, and whether it got there by a rollback (and why).

An approval says "v2 is served" at the moment it is decided; an incident rollback afterwards
moves the label back without touching the request. The editor's home and the entry page read
the label and its last move here, so they tell what clients get now, not what was once approved.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.utils.translation import gettext as _

from registry.admin.badges import when_text
from registry.kinds import kind_of
from registry.models import AuditAction, AuditEntry, VersionedEntry

MOVES = (AuditAction.LABEL_MOVE, AuditAction.ROLLBACK)


@dataclass(frozen=True)
class RolledBack:
    """The rollback that is a label's last move: from which version to which, who, when and why."""

    label: str
    from_version: int
    to_version: int
    who: str
    when: str
    note: str
    incident: bool


def served_version(entry: VersionedEntry, label: str) -> int | None:
    """The version `label` of `entry` serves now (None when the entry has no such label)."""
    row = kind_of(entry).label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    return row.version.number if row is not None else None


def last_rollback(entry: VersionedEntry, label: str) -> RolledBack | None:
    """The rollback that put `label` where it is, when the label's last move was one."""
    last = (AuditEntry.objects.filter(entry_kind=entry.kind, entry_id=entry.pk, label=label, action__in=MOVES)
            .order_by("-created_at", "-id").first())
    if last is None or last.action != AuditAction.ROLLBACK or last.from_version is None or last.to_version is None:
        return None
    incident = AuditEntry.objects.filter(
        entry_kind=entry.kind, entry_id=entry.pk, label=label, action=AuditAction.INCIDENT_ROLLBACK,
        from_version=last.from_version, to_version=last.to_version, id__lt=last.id).exists()
    return RolledBack(label=label, from_version=last.from_version, to_version=last.to_version,
                      who=last.actor_name, when=when_text(last.created_at), note=last.note, incident=incident)


def rollback_sentence(rolled: RolledBack) -> str:
    """'“production” serves v1: rolled back from v2 by ana on … because: “…”.' in the user's language."""
    if rolled.incident:
        text = _("“%(label)s” serves v%(to)s now: %(who)s rolled it back from v%(from)s on %(when)s "
                 "(an incident rollback)")
    else:
        text = _("“%(label)s” serves v%(to)s now: %(who)s rolled it back from v%(from)s on %(when)s")
    text %= {"label": rolled.label, "to": rolled.to_version, "who": rolled.who, "from": rolled.from_version,
             "when": rolled.when}
    if rolled.note:
        text += " " + _("because: “%(note)s”") % {"note": rolled.note}
    return text


def rollbacks_of(entry: VersionedEntry) -> list[str]:
    """A sentence for each label of `entry` whose last move was a rollback (for the entry page)."""
    sentences = []
    for name in kind_of(entry).label_model.objects.filter(entry=entry).order_by("name").values_list("name", flat=True):
        rolled = last_rollback(entry, name)
        if rolled is not None:
            sentences.append(rollback_sentence(rolled))
    return sentences
