"""The three roles the admin is organised around, as permission lists for Django groups.

Editors change drafts; Publishers also publish, move labels, roll back and manage MCP clients;
Auditors read everything and export the audit log.
"""

from __future__ import annotations

from typing import Any

from django.apps import apps as global_apps

EDIT_MODELS = ["prompt", "promptargument", "promptmessage", "resource", "resourcetemplate", "templatevariable"]
READ_MODELS = [
    "promptversion", "promptlabel", "resourceversion", "resourcelabel", "resourcetemplateversion",
    "resourcetemplatelabel", "fetchcounter", "mcpclient", "auditentry", "reviewrequest", "rollout",
]
_EDIT = [f"{action}_{model}" for model in EDIT_MODELS for action in ("add", "change", "delete", "view")]
ROLES: dict[str, list[str]] = {
    "Editors": _EDIT + [f"view_{model}" for model in READ_MODELS if model not in ("mcpclient", "auditentry")],
    "Publishers": _EDIT
    + [f"view_{model}" for model in READ_MODELS]
    + ["publish_prompt", "publish_resource", "publish_resourcetemplate", "add_mcpclient", "change_mcpclient"],
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
