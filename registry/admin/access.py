"""Who sees and changes what in the admin, beyond Django's model permissions.

Rows that change only through the services (versions, labels, audit entries, reviews, clients)
are read-only for everyone; the internals publishers and auditors oversee are kept off an
editor's home page and sidebar (their pages stay reachable by link).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from registry.kinds import KINDS


class ReadOnlyAdminMixin:
    """For ModelAdmins and inlines of rows that change only through the services (or never).

    Whoever has the view permission sees them; nobody adds, changes or deletes them in the admin.
    """

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def sees_internals(user: Any) -> bool:
    """Publishers and auditors oversee versions, labels, rollouts and fetches; editors work on drafts."""
    if not user.is_active:
        return False
    return bool(user.is_superuser or user.has_perm("registry.export_auditentry")
                or any(user.has_perm(kind.publish_permission) for kind in KINDS.values()))


class InternalsMixin:
    """Keeps a ModelAdmin off an editor's home page and sidebar (its pages stay reachable by link)."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return sees_internals(request.user) and super().has_module_permission(request)  # type: ignore[misc]
