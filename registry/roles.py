"""The three roles the admin is organised around, as permission lists for Django groups.

Editors change drafts; Publishers also publish, move labels, roll back and manage MCP clients;
Auditors read everything and export the audit log.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps as global_apps

EDIT_MODELS = ["prompt", "promptargument", "promptmessage", "resource", "resourcetemplate", "templatevariable",
               "snippet", "snippetargument"]
READ_MODELS = [
    "promptversion", "promptlabel", "resourceversion", "resourcelabel", "resourcetemplateversion",
    "resourcetemplatelabel", "snippetversion", "snippetlabel", "fetchcounter", "mcpclient", "auditentry",
    "reviewrequest", "rollout",
]
_EDIT = [f"{action}_{model}" for model in EDIT_MODELS for action in ("add", "change", "delete", "view")]
ROLES: dict[str, list[str]] = {
    "Editors": _EDIT + [f"view_{model}" for model in READ_MODELS if model not in ("mcpclient", "auditentry")],
    "Publishers": _EDIT
    + [f"view_{model}" for model in READ_MODELS]
    + ["publish_prompt", "publish_resource", "publish_resourcetemplate", "publish_snippet", "add_mcpclient",
       "change_mcpclient"],
    "Auditors": [f"view_{model}" for model in EDIT_MODELS + READ_MODELS] + ["export_auditentry"],
}


def ensure_role_groups(apps: Any = global_apps) -> None:
    """Create or refresh the role groups; `apps` is the migration state or the live registry."""
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        created_module = getattr(app_config, "models_module", None) is None
        if created_module:
            app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        if created_module:
            app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        perms = Permission.objects.filter(content_type__app_label="registry", codename__in=codenames)
        missing = set(codenames) - set(perms.values_list("codename", flat=True))
        if missing and apps is global_apps:  # a migration's state may predate later models
            raise RuntimeError(f"permissions missing for {role}: {sorted(missing)}")
        group.permissions.set(perms)


# ----------------------------------------------------------------------------- team ownership
# A folder may be owned by a group (registry.models.FolderOwner); the nearest owned folder at or
# above an entry's folder decides. Then only that group's members (with their role's permissions)
# change the drafts there and decide their reviews; the operator at the command line (user None),
# superusers and holders of ANY_FOLDER_PERMISSION work everywhere. The services ask these
# functions, so the admin, the REST API, the importer and the watcher all obey the same rule.

ANY_FOLDER_PERMISSION = "registry.edit_any_folder"


def folder_owner(folder: str) -> Any:
    """The FolderOwner row that owns `folder` (itself or the nearest owned folder above it), or None."""
    from registry.formats.folders import normalise_folder
    from registry.models import FolderOwner

    folder = normalise_folder(folder)
    if not folder:
        return None
    parts = folder.split("/")
    candidates = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]
    rows = {row.folder: row for row in FolderOwner.objects.filter(folder__in=candidates).select_related("group")}
    return next((rows[c] for c in reversed(candidates) if c in rows), None)


def works_everywhere(user: Any) -> bool:
    """The command line, superusers and holders of the registry-wide permission ignore ownership."""
    return user is None or bool(user.is_active and (user.is_superuser or user.has_perm(ANY_FOLDER_PERMISSION)))


def _in_team(user: Any, owner: Any) -> bool:
    """The one membership test: an active user in the owning group."""
    return bool(user.is_active and user.groups.filter(pk=owner.group_id).exists())


def in_owning_team(user: Any, folder: str) -> bool:
    """Whether ownership lets `user` work in `folder` (the role's permissions are checked apart)."""
    if works_everywhere(user):
        return True
    owner = folder_owner(folder)
    return owner is None or _in_team(user, owner)


def folder_refusal(user: Any, folders: list[str], *, deciding: bool = False, entry: Any = None,
                   attempted: str = "") -> Any:
    """A FolderOwnershipDenied for the first of `folders` whose owning team `user` is not in, else None.

    `folders` are the folders a change touches: an entry's old and new folder when it moves.
    `entry` and `attempted` (a word of registry.refusals.ATTEMPTS) are what the
    refusal's audit row names, once a path records it (registry.refusals)."""
    from django.utils.translation import gettext as _

    from registry import refusals
    from registry.errors import FolderOwnershipDenied

    if works_everywhere(user):
        return None
    for folder in dict.fromkeys(folders):
        owner = folder_owner(folder)
        if owner is None or _in_team(user, owner):
            continue
        params = {"user": user.get_username() or "anonymous", "folder": owner.folder, "team": owner.group.name}
        if deciding:
            text = _("%(user)s may not publish or decide reviews in the folder “%(folder)s”: it belongs to the team "
                     "“%(team)s”, and only its publishers (or someone allowed in every folder) decide there.")
        else:
            text = _("%(user)s may not change drafts in the folder “%(folder)s”: it belongs to the team “%(team)s”, "
                     "and only its editors (or someone allowed in every folder) create, edit or move entries "
                     "there.")
        return refusals.attach(FolderOwnershipDenied(text % params, folder=owner.folder), user=user, entry=entry,
                               attempted=attempted or ("decide" if deciding else "edit"), team=owner.group.name)
    return None


def require_folder_editor(user: Any, entry: Any, *, before_folder: str | None = None, attempted: str = "edit") -> None:
    """Raise FolderOwnershipDenied unless `user` may change `entry`'s draft where it was and where it goes."""
    refusal = folder_refusal(user, [f for f in (before_folder, entry.folder) if f is not None], entry=entry,
                             attempted=attempted)
    if refusal is not None:
        raise refusal
