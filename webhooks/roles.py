"""Webhook permissions for the role groups: Publishers configure webhooks and retry deliveries,
Auditors see them. Granted after every migrate (`registry.roles` sets only registry's own
permissions on the groups, so these are added on top, never replaced)."""

from __future__ import annotations

from typing import Any

ROLE_PERMISSIONS = {
    "Publishers": ["add_webhook", "change_webhook", "delete_webhook", "view_webhook", "view_webhookdelivery"],
    "Auditors": ["view_webhook", "view_webhookdelivery"],
}


def grant_publishers(sender: Any = None, apps: Any = None, using: str = "default", **kwargs: Any) -> None:
    from django.apps import apps as global_apps
    from django.contrib.auth.management import create_permissions

    apps = apps or global_apps
    create_permissions(global_apps.get_app_config("webhooks"), verbosity=0, using=using)
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLE_PERMISSIONS.items():
        group = Group.objects.using(using).filter(name=role).first()
        if group is None:
            continue
        perms = Permission.objects.using(using).filter(content_type__app_label="webhooks", codename__in=codenames)
        group.permissions.add(*perms)
