"""What every extra page of a versioned entry shares: the entry, its page URLs, the context, refusals.

EntryPageMixin is a ModelAdmin subclass rather than a bare mixin, so the pages built on it
type-check against the admin they extend; VersionedEntryAdmin combines them all.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.utils import quote, unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from registry import roles
from registry.errors import FolderOwnershipDenied, InvalidEntry, PublishPermissionDenied, RegistryError
from registry.models import VersionedEntry
from registry.refusals import record_refusal
from registry.release import services


def add_refusal(form: forms.BaseForm, exc: RegistryError) -> None:
    """Show why the registry refused at the top of `form`, each problem of an invalid draft on its own line."""
    for problem in exc.problems if isinstance(exc, InvalidEntry) else [exc.message]:
        form.add_error(None, problem)


class EntryPageMixin(admin.ModelAdmin):
    """The helpers of an entry's extra pages (registry/admin/views/)."""

    def _url(self, name: str, obj: VersionedEntry) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_{name}", args=[quote(obj.pk)])

    def _entry(self, request: HttpRequest, object_id: str) -> VersionedEntry:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(_("No %(thing)s with id %(id)r.") % {"thing": self.opts.verbose_name, "id": object_id})
        if not self.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        return obj

    def _context(self, request: HttpRequest, obj: VersionedEntry, title: str, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": obj.key,
            "opts": self.opts,
            "original": obj,
            "entry_kind": obj.kind,
            "can_publish": services.can_publish(request.user, obj),
            "urls": {
                name: self._url(name, obj)
                for name in ("change", "history", "preview", "diff", "publish", "label", "restore", "request",
                             "rollout")
            },
            "can_change": self.has_change_permission(request, obj),
            **extra,
        }

    def _denied(self, request: HttpRequest, obj: VersionedEntry, message: str) -> HttpResponse:
        context = self._context(request, obj, _("Not allowed"), message=message)
        return TemplateResponse(request, "admin/registry/denied.html", context, status=403)

    def _publisher_refusal(self, request: HttpRequest, obj: VersionedEntry) -> PublishPermissionDenied | None:
        """Why the user may not publish, move labels, roll back or run rollouts of `obj` (the release
        services' own refusal, ready to be audited), or None when they may."""
        if services.can_publish(request.user, obj):
            return None
        try:
            services.require_publisher(request.user, obj)
        except PublishPermissionDenied as exc:
            return exc
        return None

    def _refused(self, request: HttpRequest, obj: VersionedEntry, refusal: RegistryError,
                 role_reason: str = "") -> HttpResponse:
        """The "not allowed" page of a refused page. A POST is an attempt and leaves its `refused`
        audit row (registry.refusals); opening the page tries nothing. `role_reason` words a
        missing role for this page; a refusal by team ownership always says whose folder it is."""
        if request.method == "POST":
            record_refusal(refusal)
        reason = refusal.message if isinstance(refusal, FolderOwnershipDenied) or not role_reason else role_reason
        return self._denied(request, obj, reason)

    @staticmethod
    def _ownership_refusal(request: HttpRequest, obj: VersionedEntry, *, attempted: str) -> RegistryError | None:
        """The refusal of `attempted` on `obj` for a user who holds the permission for the kind but
        is not in the team owning its folder; None otherwise (a user without the permission at all
        meets Django's own 403)."""
        codename = "delete" if attempted == "delete" else "change"
        if not request.user.has_perm(f"{obj._meta.app_label}.{codename}_{obj._meta.model_name}"):
            return None
        return roles.folder_refusal(request.user, [obj.folder], entry=obj, attempted=attempted)
