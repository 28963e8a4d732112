"""The publish page, and the "Publish selected drafts" action that shares its helpers.

Publishing goes through `registry.release.reviews.publish_or_request`: protected labels move
only with an override, otherwise a review request is filed for each, and the page says so.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.diff.sections import build
from registry.admin.downstream import Downstream, downstream
from registry.admin.forms.releases import PublishForm
from registry.admin.views.entry_page import EntryPageMixin, add_refusal
from registry.authoring.snapshots import Payloads, diff_loader, snapshot_of
from registry.authoring.validation import validate_entry
from registry.errors import FolderOwnershipDenied, PublishPermissionDenied, RegistryError
from registry.models import PRODUCTION, EntryVersion, ReviewRequest, Snippet, VersionedEntry
from registry.refusals import record_refusal
from registry.release import reviews, services


class PublishPageMixin(EntryPageMixin):
    """Adds the publish page (URL name "publish") and the "Publish selected drafts" action."""

    def publish_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._entry(request, object_id)
        refusal = self._publisher_refusal(request, obj)
        if refusal is not None:
            return self._refused(request, obj, refusal, _("You may edit drafts but not publish them. Ask a publisher."))
        label_names = [label.name for label in obj.labels.all()]
        protected = [label.name for label in obj.labels.all() if label.protected]
        protected += [name for name in services.protected_label_names() if name not in label_names]
        form = PublishForm(request.POST or None, label_names=label_names, protected=protected,
                           can_override=services.can_override(request.user))
        if request.method == "POST" and form.is_valid():
            try:
                version, filed = self._publish_or_request(request, obj, form)
            except PublishPermissionDenied as exc:
                return self._denied(request, obj, exc.message)
            except RegistryError as exc:
                add_refusal(form, exc)
            else:
                self._report_publish(request, obj, version, form, filed)
                return HttpResponseRedirect(self._url("history", obj))
        latest = obj.versions.first()
        report = validate_entry(obj)
        payloads: Payloads = {}
        draft = snapshot_of(obj, payloads)
        context = self._context(
            request, obj, _("Publish %(key)s") % {"key": obj.key},
            form=form, report=report, latest=latest,
            diff=build(obj.kind, latest.snapshot if latest else None, draft,
                       before_name=f"v{latest.number}" if latest else _("nothing published"),
                       after_name=_("draft"), load=diff_loader(payloads)),
            # What a snippet's publish changes in the entries including it, on each label the form offers
            # (production, the default, always; another label where entries follow it there, whether or
            # not the snippet has that label yet).
            downstreams=self._downstreams(obj, form.label_names, draft.get("text", ""))
            if isinstance(obj, Snippet) else [],
        )
        return TemplateResponse(request, "admin/registry/publish.html", context)

    @staticmethod
    def _downstreams(snippet: Snippet, label_names: list[str], text: str) -> list[Downstream]:
        found = [downstream(snippet, label, text) for label in dict.fromkeys([PRODUCTION, *label_names])]
        return [each for each in found if each.label == PRODUCTION or each.total]

    def _publish_or_request(self, request: HttpRequest, obj: VersionedEntry,
                            form: PublishForm) -> tuple[EntryVersion, list[ReviewRequest]]:
        """Publish; protected labels are moved only with the override, else a review request is filed for each."""
        return reviews.publish_or_request(obj, acting_user=request.user, note=form.cleaned_data["note"],
                                          labels=form.chosen_labels(),
                                          override_reason=form.cleaned_data.get("override_reason"))

    def _report_publish(self, request: HttpRequest, obj: VersionedEntry, version: EntryVersion,
                        form: PublishForm, filed: list[ReviewRequest]) -> None:
        moved = [name for name in form.chosen_labels() if name not in {r.label for r in filed}]
        messages.success(request, _("Published %(key)s as v%(number)s (%(labels)s).") % {
            "key": obj.key, "number": version.number, "labels": ", ".join(moved) or _("no labels moved")})
        for review in filed:
            messages.warning(request, _("'%(label)s' is protected, so it still serves what it served before. "
                                        "Review request #%(pk)s was filed: another publisher must approve it "
                                        "in the review queue.") % {"label": review.label, "pk": review.pk})

    @admin.action(description=gettext_lazy("Publish selected drafts…"))
    def publish_selected(self, request, queryset):
        objs = list(queryset)
        refused = [(obj, refusal) for obj in objs if (refusal := self._publisher_refusal(request, obj)) is not None]
        if refused:  # nothing is published unless all of it may be; the attempt (the action's POST) is audited
            for obj, refusal in refused:
                record_refusal(refusal)
                reason = (refusal.message if isinstance(refusal, FolderOwnershipDenied)
                          else _("You may edit drafts but not publish them."))
                messages.error(request, _("%(key)s: %(reason)s") % {"key": obj.key, "reason": reason})
            return None
        form = PublishForm(request.POST if request.POST.get("confirm") else None,
                           can_override=services.can_override(request.user), protected=services.protected_label_names())
        if form.is_bound and form.is_valid():
            for obj in objs:
                try:
                    version, filed = self._publish_or_request(request, obj, form)
                except RegistryError as exc:
                    messages.error(request, _("%(key)s: %(reason)s") % {"key": obj.key, "reason": exc.message})
                else:
                    self._report_publish(request, obj, version, form, filed)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": _("Publish %(count)s %(things)s") % {"count": len(objs), "things": self.opts.verbose_name_plural},
            "opts": self.opts,
            "objects": objs,
            "form": form,
            "action_name": "publish_selected",
            "selected": [obj.pk for obj in objs],
        }
        return TemplateResponse(request, "admin/registry/publish_selected.html", context)
