"""The request page: an editor asks a publisher to release the draft (or a version) on a label.

The request is filed through `registry.release.reviews`; another publisher approves or rejects
it in the review queue (registry/admin/reviews.py).
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.translation import gettext as _

from registry.admin.diff.sections import build
from registry.admin.forms.releases import ReviewRequestForm
from registry.admin.views.entry_page import EntryPageMixin, add_refusal
from registry.authoring.snapshots import Payloads, diff_loader, snapshot_of
from registry.authoring.validation import validate_entry
from registry.errors import RegistryError
from registry.models import PRODUCTION
from registry.release import reviews
from registry.release.labels import known_label_names


class ReleaseRequestPageMixin(EntryPageMixin):
    """Adds the request page (URL name "request")."""

    def request_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Ask a publisher to release the current draft (or ?version=N) on a label."""
        obj = self._entry(request, object_id)
        if not reviews.can_request(request.user, obj):
            return self._denied(request, obj, _("You may not change this entry, so you may not request its release."))
        data = request.POST if request.method == "POST" else request.GET
        number = str(data.get("version") or "")
        version = obj.versions.filter(number=int(number)).first() if number.isdigit() else None
        form = ReviewRequestForm(request.POST if request.method == "POST" else None,
                                 initial={"label": data.get("label") or PRODUCTION, "percent": data.get("percent")},
                                 known_labels=known_label_names())
        if request.method == "POST" and form.is_valid():
            try:
                review = reviews.request_publication(
                    obj, acting_user=request.user, note=form.cleaned_data["note"], label=form.cleaned_data["label"],
                    version_number=version.number if version else None, percent=form.cleaned_data.get("percent"),
                )
            except RegistryError as exc:
                add_refusal(form, exc)
            else:
                messages.success(request, _("Review request #%(pk)s was filed: a publisher other than you will "
                                            "approve or reject it. You can follow it in the review queue.")
                                 % {"pk": review.pk})
                return HttpResponseRedirect(reverse("admin:registry_reviewrequest_change", args=[review.pk]))
        label_name = (form.data.get("label") if form.is_bound else form.initial.get("label")) or PRODUCTION
        current = obj.labels.filter(name=label_name).select_related("version").first()
        payloads: Payloads = {}
        after = version.snapshot if version else snapshot_of(obj, payloads)
        context = self._context(
            request, obj, _("Request the release of %(key)s") % {"key": obj.key}, form=form, version=version,
            current=current,
            report=None if version else validate_entry(obj),
            diff=build(obj.kind, current.version.snapshot if current else None, after,
                       before_name=_("%(label)s now (v%(number)s)") % {
                           "label": label_name, "number": current.version.number} if current else _("nothing"),
                       after_name=f"v{version.number}" if version else _("draft"),
                       load=diff_loader(payloads)),
        )
        return TemplateResponse(request, "admin/registry/request.html", context)
