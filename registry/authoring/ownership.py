"""Setting, changing and removing the team that owns a folder, audited (action `folder_owner`).

Who owns what is the rule registry.roles applies to every draft change and review decision, so a
change of owner is a change of who may act: it is recorded like one, with the folder as the
subject (kind "folder"), the team before and after, and who changed it.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from django.contrib.auth.models import Group
from django.db import transaction
from django.utils.translation import gettext as _

from registry import refusals
from registry.audit import User, actor_name, write_audit
from registry.errors import PublishPermissionDenied
from registry.formats.folders import normalise_folder, validate_folder
from registry.models import AuditAction, FolderOwner

MANAGE_PERMISSION = "registry.change_folderowner"


def may_manage_owners(user: User) -> bool:
    """The command line, and users holding the folder-owner permission (superusers hold every one)."""
    return user is None or bool(user.is_active and user.has_perm(MANAGE_PERMISSION))


def set_folder_owner(folder: str, group: Group | None, *, acting_user: User, note: str = "") -> FolderOwner | None:
    """Make `group` the owner of `folder` (None: the folder has no owner of its own any more).

    Returns the row (None when removed); writes one audit row when the owner changed. A refusal
    is audited before it leaves (registry.refusals), outside this function's transaction."""
    if not may_manage_owners(acting_user):
        refusal = refusals.attach(PublishPermissionDenied(
            _("%(user)s may not change who owns a folder (permission %(permission)s).")
            % {"user": actor_name(acting_user), "permission": MANAGE_PERMISSION}),
            user=acting_user, entry=None, attempted="own_folder", folder=normalise_folder(folder))
        refusals.record_refusal(refusal)
        raise refusal
    return _set_folder_owner(folder, group, acting_user=acting_user, note=note)


@transaction.atomic
def _set_folder_owner(folder: str, group: Group | None, *, acting_user: User, note: str) -> FolderOwner | None:
    folder = normalise_folder(folder)
    validate_folder(folder)
    row = FolderOwner.objects.select_for_update().select_related("group").filter(folder=folder).first()
    before = row.group.name if row is not None else None
    after = group.name if group is not None else None
    if group is None:
        if row is not None:
            row.delete()
        row = None
    elif row is None:
        row = FolderOwner.objects.create(folder=folder, group=group)
    elif row.group_id != group.pk:
        row.group = group
        row.save(update_fields=["group"])
    if before != after:
        record_owner_change(folder, before=before, after=after, acting_user=acting_user, note=note)
    return row


def record_owner_change(folder: str, *, before: str | None, after: str | None, acting_user: User,
                        note: str = "") -> Any:
    """The audit row of an owner change (inside the changing transaction)."""
    subject = SimpleNamespace(kind="folder", key=folder, pk=None)  # what write_audit reads of an entry
    return write_audit(entry=subject, action=AuditAction.FOLDER_OWNER_CHANGED, acting_user=acting_user,
                       note=note, changes=[{"field": "owner", "before": before, "after": after}])
