"""Who may call what: Django model permissions, the same ones the admin and the role groups use.

Reads need the model's view permission (Auditors have them all); draft writes need add/change.
Publishing, label moves, approvals and overrides are checked again by the registry services.
"""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import SAFE_METHODS, BasePermission, DjangoModelPermissions


class ModelPermissions(DjangoModelPermissions):
    """DjangoModelPermissions that also needs `view_<model>` to read."""

    perms_map = {
        **DjangoModelPermissions.perms_map,
        "GET": ["%(app_label)s.view_%(model_name)s"],
        "HEAD": ["%(app_label)s.view_%(model_name)s"],
        "OPTIONS": ["%(app_label)s.view_%(model_name)s"],
    }


class ReadModelPermission(ModelPermissions):
    """Any method needs only the view permission: for actions whose real check is in a service."""

    def has_permission(self, request: Any, view: Any) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        queryset = self._queryset(view)
        return request.user.has_perm(f"{queryset.model._meta.app_label}.view_{queryset.model._meta.model_name}")


def requires(*perms: str, safe_only: bool = False) -> type[BasePermission]:
    """A permission class requiring all of `perms` (e.g. 'registry.export_auditentry')."""

    class _Requires(BasePermission):
        message = "You need the permission(s) " + ", ".join(perms) + " for this."

        def has_permission(self, request: Any, view: Any) -> bool:
            if safe_only and request.method not in SAFE_METHODS:
                return False
            user = request.user
            return bool(user and user.is_authenticated and user.has_perms(perms))

    _Requires.__name__ = "Requires_" + "_".join(p.split(".")[-1] for p in perms)
    return _Requires
