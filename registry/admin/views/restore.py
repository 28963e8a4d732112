"""The restore page: confirm, then overwrite the draft with a published version's content (audited)."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from registry.admin.diff.sections import build
from registry.admin.views.entry_page import EntryPageMixin
from registry.authoring import drafts
from registry.authoring.snapshots import Payloads, diff_loader, snapshot_of


class RestorePageMixin(EntryPageMixin):
    """Adds the restore page (URL name "restore")."""

    def restore_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirm, then overwrite the draft with a published version's content (audited)."""
        obj = self._entry(request, object_id)
        if not self.has_change_permission(request, obj):
            refusal = self._ownership_refusal(request, obj, attempted="restore")
            if refusal is None:
                raise PermissionDenied
            return self._refused(request, obj, refusal)
        data = request.POST if request.method == "POST" else request.GET
        number = data.get("version", "")
        version = obj.versions.filter(number=int(number)).first() if number.isdigit() else None
        if version is None:
            raise Http404(_("%(key)s has no version %(version)r.") % {"key": obj.key, "version": number})
        if request.method == "POST":
            with transaction.atomic():
                drafts.restore_draft(obj, version.number, acting_user=request.user,
                                     note=(request.POST.get("note") or "").strip())
            messages.success(request, _("The draft of %(key)s now matches v%(number)s. Publish it to serve it.")
                             % {"key": obj.key, "number": version.number})
            return HttpResponseRedirect(self._url("change", obj))
        payloads: Payloads = {}
        context = self._context(
            request, obj,
            _("Restore the draft of %(key)s from v%(number)s") % {"key": obj.key, "number": version.number},
            version=version,
            diff=build(obj.kind, snapshot_of(obj, payloads), version.snapshot,
                       before_name=_("current draft"), after_name=f"v{version.number}",
                       load=diff_loader(payloads)),
        )
        return TemplateResponse(request, "admin/registry/restore.html", context)
