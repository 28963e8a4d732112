"""The rollout page: start, change, complete or stop a percentage rollout, with the running ones' progress.

The form carries the rollout state it was shown, so a change made meanwhile by someone else is
refused (registry.release.rollouts) instead of silently replaced.
"""

from __future__ import annotations

import json
from typing import cast

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from registry.admin.fetch_stats import rollout_progress
from registry.admin.forms.releases import RolloutForm
from registry.admin.views.entry_page import EntryPageMixin
from registry.errors import RegistryError, RolloutConflict
from registry.models import PRODUCTION, Rollout, VersionedEntry
from registry.release import rollouts, services


def version_choices(entry: VersionedEntry) -> list[tuple[int, str]]:
    """Published versions as 'v3 — change note' choices, newest first."""
    return [(v.number, _("v%(number)s — %(note)s") % {"number": v.number, "note": v.change_note[:60]})
            for v in entry.versions.all()]


class RolloutPageMixin(EntryPageMixin):
    """Adds the rollout page (URL name "rollout")."""

    def rollout_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Start, change, complete or stop a percentage rollout; shows progress of the running ones."""
        obj = self._entry(request, object_id)
        can_publish = services.can_publish(request.user, obj)
        running = list(Rollout.objects.filter(entry_kind=obj.kind, entry_id=obj.pk))
        first = running[0] if running else None
        label_names = [label.name for label in obj.labels.all()]
        seen = json.dumps({name: rollouts.state_of(obj, name) for name in label_names})
        initial = {"label": request.GET.get("label") or (first.label if first else PRODUCTION),
                   "version": request.GET.get("version") or (first.candidate_version if first else None),
                   "percent": first.percent if first else 10, "seen": seen}
        form = RolloutForm(request.POST if request.method == "POST" else None, initial=initial,
                           can_override=services.can_override(request.user),
                           labels=label_names, versions=version_choices(obj))
        if request.method == "POST":
            refusal = self._publisher_refusal(request, obj)
            if refusal is not None:
                return self._refused(request, obj, refusal, _("You may not change rollouts. Ask a publisher, or "
                                                              "request a review with a percentage."))
            if form.is_valid():
                data = form.cleaned_data
                try:
                    result = rollouts.set_rollout(
                        obj, label=data["label"], version_number=data["version"], percent=data["percent"],
                        acting_user=request.user, note=data["note"], override_reason=data.get("override_reason"),
                        if_match=form.seen_state(data["label"]),
                    )
                except RegistryError as exc:
                    form.add_error(None, exc.message)
                    if isinstance(exc, RolloutConflict):  # the page now shows the current state: resubmit to apply
                        posted = cast(QueryDict, form.data).copy()  # request.POST, as given to the form
                        posted["seen"] = seen
                        form.data = posted
                else:
                    if result is not None:
                        messages.success(request, _("v%(number)s now goes to %(percent)s%% of the clients of "
                                                    "'%(label)s'.") % {"number": result.candidate_version,
                                                                       "percent": result.percent,
                                                                       "label": result.label})
                    elif data["percent"] == 100:
                        messages.success(request, _("Rollout complete: '%(label)s' serves v%(number)s.")
                                         % {"label": data["label"], "number": data["version"]})
                    else:
                        messages.success(request, _("Rollout stopped: every client of '%(label)s' gets the "
                                                    "label's version again.") % {"label": data["label"]})
                    return HttpResponseRedirect(self._url("rollout", obj))
        context = self._context(
            request, obj, _("Percentage rollout of %(key)s") % {"key": obj.key}, form=form, can_publish=can_publish,
            progress=[rollout_progress(obj, rollout) for rollout in running],
            labels=list(obj.labels.select_related("version")), versions=list(obj.versions.all()[:20]),
        )
        return TemplateResponse(request, "admin/registry/rollout.html", context)
