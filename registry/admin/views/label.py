"""The label page: confirm, then point a label at an existing version; backwards, that is a roll back.

A protected label is not moved from here without an override: a review request is filed
instead, except for an incident rollback to a version the label served before.
"""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from registry.admin.diff.sections import build
from registry.admin.forms.releases import LabelMoveForm
from registry.admin.views.entry_page import EntryPageMixin
from registry.authoring.snapshots import diff_loader
from registry.errors import PublishPermissionDenied, RegistryError
from registry.models import PRODUCTION, VersionedEntry
from registry.release import reviews, services


def can_roll_back(entry: VersionedEntry, label: str = PRODUCTION) -> bool:
    """True when `label` serves a version and an older one exists to go back to."""
    current = entry.labels.filter(name=label).select_related("version").first()
    return current is not None and entry.versions.filter(number__lt=current.version.number).exists()


class LabelPageMixin(EntryPageMixin):
    """Adds the label page (URL name "label"): move a label, or roll it back."""

    def label_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirm, then point a label at an existing version (backwards = roll back)."""
        obj = self._entry(request, object_id)
        refusal = self._publisher_refusal(request, obj)
        if refusal is not None:
            return self._refused(request, obj, refusal,
                                 _("You may edit drafts but not move labels or roll back. Ask a publisher."))
        data = request.POST if request.method == "POST" else request.GET
        label_name = data.get("label") or PRODUCTION
        current = obj.labels.filter(name=label_name).select_related("version").first()
        try:
            target_number = int(data.get("version") or 0)
        except ValueError:
            target_number = 0
        if not target_number and current is not None:  # "roll back" without a version: the one before
            older = obj.versions.filter(number__lt=current.version.number).first()
            target_number = older.number if older else 0
        target = obj.versions.filter(number=target_number).first()
        if target is None:
            messages.error(request, _("%(key)s has no version to point '%(label)s' at.")
                           % {"key": obj.key, "label": label_name})
            return HttpResponseRedirect(self._url("history", obj))
        rollback = current is not None and target.number < current.version.number
        # An incident rollback (an older version this protected label served before) needs no second publisher.
        incident = services.is_incident_rollback(obj, label_name, target.number)
        protected = services.is_protected(obj, label_name) and not incident
        initial = {"label": label_name, "version": target.number}
        form = LabelMoveForm(request.POST if request.method == "POST" else None, initial=initial, rollback=rollback,
                             can_override=protected and services.can_override(request.user))
        if request.method == "POST" and form.is_valid():
            override_reason = form.cleaned_data.get("override_reason") or None
            try:
                if protected and not override_reason:
                    # Four eyes: file a review instead of moving the protected label.
                    review = reviews.request_publication(
                        obj, acting_user=request.user, label=form.cleaned_data["label"],
                        version_number=form.cleaned_data["version"],
                        # Stored and sent to webhooks: English whatever the admin speaks (like every audit note).
                        note=form.cleaned_data["note"] or f"Point '{label_name}' at v{target.number}.",
                    )
                elif rollback:
                    services.rollback(obj, acting_user=request.user, note=form.cleaned_data["note"],
                                      label=form.cleaned_data["label"], to_version=form.cleaned_data["version"],
                                      override_reason=override_reason)
                else:
                    services.move_label(obj, acting_user=request.user, note=form.cleaned_data["note"],
                                        label=form.cleaned_data["label"], version_number=form.cleaned_data["version"],
                                        override_reason=override_reason)
            except PublishPermissionDenied as exc:
                return self._denied(request, obj, exc.message)
            except RegistryError as exc:
                form.add_error(None, exc.message)
            else:
                if protected and not override_reason:
                    messages.warning(request, _("'%(label)s' is protected: nothing moved yet. Review request "
                                                "#%(pk)s was filed; another publisher must approve it.")
                                     % {"label": label_name, "pk": review.pk})
                else:
                    done = (_("Rolled back '%(label)s' of %(key)s to v%(number)s.") if rollback
                            else _("Moved '%(label)s' of %(key)s to v%(number)s.")) % {
                        "label": label_name, "key": obj.key, "number": target.number}
                    if incident and not override_reason:
                        done += " " + _("It is recorded as an incident rollback; the other publishers are told.")
                    messages.success(request, done)
                return HttpResponseRedirect(self._url("history", obj))
        current_name = f"v{current.version.number}" if current else _("nothing")
        title = (_("Roll back label '%(label)s' of %(key)s to v%(number)s") if rollback
                 else _("Move label '%(label)s' of %(key)s to v%(number)s"))
        context = self._context(
            request, obj, title % {"label": label_name, "key": obj.key, "number": target.number},
            form=form, label_name=label_name, current=current, target=target, rollback=rollback, protected=protected,
            incident=incident,
            diff=build(obj.kind, current.version.snapshot if current else None, target.snapshot,
                       before_name=_("now (%(version)s)") % {"version": current_name},
                       after_name=_("after (v%(number)s)") % {"number": target.number}, load=diff_loader()),
        )
        return TemplateResponse(request, "admin/registry/label.html", context)
