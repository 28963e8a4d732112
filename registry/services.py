"""Write side: every publish, label move, rollback, archive and audited draft change.

Each service runs in one transaction together with its audit row and its change-log row,
checks the acting user's permission itself (so the admin, the API, imports and any crafted
request meet the same rule), and leaves announcements to `changes` (after commit).
`acting_user=None` means a trusted operator at the command line.
"""

from __future__ import annotations

from typing import Any, Iterable

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import transaction
from django.utils import timezone

from registry.changes import record_change
from registry.errors import InvalidEntry, NothingToPublish, PublishPermissionDenied, RegistryError
from registry.kinds import kind_of
from registry.models import PRODUCTION, AuditAction, AuditEntry, EntryVersion, ReleaseLabel, VersionedEntry
from registry.models.base import label_name_validator
from registry.snapshots import content_hash, diff_snapshots, snapshot_of
from registry.validation import validate_entry

User = AbstractBaseUser | AnonymousUser | None

LIST_FIELDS = ("name", "title", "description", "arguments", "mimeType", "size", "annotations", "uriTemplate")


def actor_name(user: User, fallback: str = "command line") -> str:
    if user is None:
        return fallback
    return user.get_username() or "anonymous"


def can_publish(user: User, entry: VersionedEntry) -> bool:
    if user is None:
        return True
    return bool(user.is_active and user.has_perm(kind_of(entry).publish_permission))


def require_publisher(user: User, entry: VersionedEntry) -> None:
    if not can_publish(user, entry):
        raise PublishPermissionDenied(
            f"{actor_name(user)} may edit drafts but not publish, move labels or roll back {entry.kind}s."
        )


def write_audit(
    *,
    entry: VersionedEntry,
    action: str,
    acting_user: User,
    actor: str | None = None,
    note: str = "",
    label: str = "",
    from_version: int | None = None,
    to_version: int | None = None,
    changes: list[dict[str, Any]] | None = None,
) -> AuditEntry:
    return AuditEntry.objects.create(
        actor=acting_user if getattr(acting_user, "pk", None) else None,
        actor_name=actor or actor_name(acting_user),
        action=action,
        entry_kind=entry.kind,
        entry_key=entry.key,
        entry_id=entry.pk,
        label=label,
        from_version=from_version,
        to_version=to_version,
        changes=changes or [],
        note=note,
    )


def latest_version(entry: VersionedEntry) -> EntryVersion | None:
    return entry.versions.order_by("-number").first()  # type: ignore[attr-defined]


def _lock(entry: VersionedEntry) -> VersionedEntry:
    return type(entry).objects.select_for_update().get(pk=entry.pk)


def _list_changed(before: dict[str, Any] | None, after: dict[str, Any] | None) -> bool:
    if before is None or after is None:
        return True
    return any(before.get(f) != after.get(f) for f in LIST_FIELDS)


@transaction.atomic
def publish(
    entry: VersionedEntry,
    *,
    acting_user: User,
    note: str,
    labels: Iterable[str] = (PRODUCTION,),
    actor: str | None = None,
) -> EntryVersion:
    """Freeze the draft as version N+1 and point `labels` at it."""
    require_publisher(acting_user, entry)
    note = (note or "").strip()
    if not note:
        raise InvalidEntry(["A change note is required to publish: say what changed and why."])
    entry = _lock(entry)
    report = validate_entry(entry)
    if not report.ok:
        raise InvalidEntry(report.errors)
    snapshot = snapshot_of(entry)
    digest = content_hash(snapshot)
    previous = latest_version(entry)
    if previous is not None and previous.content_hash == digest:
        raise NothingToPublish(f"The draft of {entry.key} is identical to v{previous.number}; nothing to publish.")
    version = kind_of(entry).version_model.objects.create(
        entry=entry,
        number=(previous.number + 1) if previous else 1,
        parent=previous,
        snapshot=snapshot,
        content_hash=digest,
        change_note=note,
        author=acting_user if getattr(acting_user, "pk", None) else None,
        author_name=actor or actor_name(acting_user),
    )
    write_audit(
        entry=entry, action=AuditAction.PUBLISH, acting_user=acting_user, actor=actor, note=note,
        from_version=previous.number if previous else None, to_version=version.number,
        changes=diff_snapshots(previous.snapshot if previous else None, snapshot),
    )
    for label in labels:
        _point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note)
    return version


def _point_label(
    entry: VersionedEntry,
    label: str,
    version: EntryVersion,
    *,
    acting_user: User,
    actor: str | None,
    note: str,
    action: str | None = None,
) -> ReleaseLabel:
    label_name_validator(label)
    label_model = kind_of(entry).label_model
    current = label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    before = current.version if current else None
    if before is not None and before.pk == version.pk:
        return current
    if current is None:
        current = label_model(entry=entry, name=label, protected=(label == PRODUCTION))
    current.version = version
    current.moved_by = actor or actor_name(acting_user)
    current.save()
    if action is None:
        action = AuditAction.ROLLBACK if before is not None and version.number < before.number else AuditAction.LABEL_MOVE
    write_audit(
        entry=entry, action=action, acting_user=acting_user, actor=actor, note=note, label=label,
        from_version=before.number if before else None, to_version=version.number,
        changes=diff_snapshots(before.snapshot if before else None, version.snapshot),
    )
    record_change(
        kind=entry.kind, key=entry.key, label=label,
        list_changed=entry.kind == "prompt" or _list_changed(before.snapshot if before else None, version.snapshot),
    )
    return current


@transaction.atomic
def move_label(
    entry: VersionedEntry,
    *,
    label: str,
    version_number: int,
    acting_user: User,
    note: str = "",
    actor: str | None = None,
) -> ReleaseLabel:
    """Point `label` at an existing version: a rollout, or a rollback when it goes backwards."""
    require_publisher(acting_user, entry)
    entry = _lock(entry)
    version = entry.versions.filter(number=version_number).first()  # type: ignore[attr-defined]
    if version is None:
        raise RegistryError(f"{entry.key} has no version {version_number}.")
    return _point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note)


@transaction.atomic
def rollback(
    entry: VersionedEntry,
    *,
    acting_user: User,
    note: str,
    label: str = PRODUCTION,
    to_version: int | None = None,
    actor: str | None = None,
) -> ReleaseLabel:
    """Point `label` back at `to_version`, or at the version before the one it serves now."""
    require_publisher(acting_user, entry)
    if not (note or "").strip():
        raise InvalidEntry(["Say why you roll back: a note is required."])
    entry = _lock(entry)
    current = kind_of(entry).label_model.objects.filter(entry=entry, name=label).select_related("version").first()
    if current is None:
        raise RegistryError(f"{entry.key} has no '{label}' label to roll back.")
    if to_version is None:
        older = entry.versions.filter(number__lt=current.version.number).order_by("-number").first()  # type: ignore[attr-defined]
        if older is None:
            raise RegistryError(f"'{label}' already serves the first version of {entry.key}.")
        to_version = older.number
    version = entry.versions.filter(number=to_version).first()  # type: ignore[attr-defined]
    if version is None:
        raise RegistryError(f"{entry.key} has no version {to_version}.")
    return _point_label(entry, label, version, acting_user=acting_user, actor=actor, note=note.strip(),
                        action=AuditAction.ROLLBACK)


@transaction.atomic
def set_archived(entry: VersionedEntry, *, archived: bool, acting_user: User, note: str = "") -> VersionedEntry:
    """Archive (stop serving, keep history) or restore an entry."""
    require_publisher(acting_user, entry)
    entry = _lock(entry)
    if bool(entry.archived_at) == archived:
        return entry
    entry.archived_at = timezone.now() if archived else None
    entry.save(update_fields=["archived_at", "updated_at"])
    write_audit(entry=entry, action=AuditAction.ARCHIVE if archived else AuditAction.UNARCHIVE,
                acting_user=acting_user, note=note)
    record_change(kind=entry.kind, key=entry.key, list_changed=True)
    return entry


def record_draft_change(
    entry: VersionedEntry,
    *,
    before: dict[str, Any] | None,
    acting_user: User,
    actor: str | None = None,
    note: str = "",
) -> AuditEntry | None:
    """Audit an edit of the working copy (call inside the saving transaction). Drafts announce nothing."""
    after = snapshot_of(entry)
    changes = diff_snapshots(before, after)
    if before is not None and not changes:
        return None
    return write_audit(
        entry=entry, action=AuditAction.CREATE if before is None else AuditAction.EDIT,
        acting_user=acting_user, actor=actor, note=note, changes=changes,
    )


def record_deletion(entry: VersionedEntry, *, snapshot: dict[str, Any], acting_user: User, note: str = "") -> AuditEntry:
    """Audit the deletion of a never-published entry (published ones are archived instead)."""
    return write_audit(entry=entry, action=AuditAction.DELETE, acting_user=acting_user, note=note,
                       changes=diff_snapshots(snapshot, None))
