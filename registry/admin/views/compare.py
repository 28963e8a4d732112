"""The compare page (URL name "diff"): any two of the draft, a label and a version, as one readable diff."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from registry.admin.diff.sections import build
from registry.admin.downstream import Downstream, downstream
from registry.admin.views.entry_page import EntryPageMixin
from registry.authoring.snapshots import Payloads, diff_loader, snapshot_of
from registry.models import PRODUCTION, Snippet, VersionedEntry
from registry.models.base import label_name_validator


class ComparePageMixin(EntryPageMixin):
    """Adds the compare page (URL name "diff")."""

    def _side(self, obj: VersionedEntry, ref: str, payloads: Payloads) -> tuple[str, dict[str, Any] | None]:
        """One side of the compare page; a draft's unpublished texts go into `payloads` for the diff."""
        if ref == "draft":
            return _("current draft"), snapshot_of(obj, payloads)
        if ref.startswith("label:"):
            name = ref.split(":", 1)[1]
            try:
                label_name_validator(name)
            except ValidationError:
                raise Http404(_("%(key)s has no label with that name.") % {"key": obj.key}) from None
            label = obj.labels.filter(name=name).select_related("version").first()
            if label is None:
                return _("%(label)s (not set: nothing served)") % {"label": name}, None
            return (_("%(label)s (v%(number)s)") % {"label": name, "number": label.version.number},
                    label.version.snapshot)
        number = ref.lstrip("v")
        version = obj.versions.filter(number=int(number)).first() if number.isdigit() else None
        if version is None:
            raise Http404(_("%(key)s has no version %(version)s.") % {"key": obj.key, "version": ref})
        return f"v{version.number}", version.snapshot

    @staticmethod
    def _downstream(obj: Snippet, a: str, b: str, b_snap: dict[str, Any] | None) -> Downstream:
        """What releasing side b on the label of side a (production unless a is a label) changes downstream:
        a version by its number, the draft by its text (`_side` has refused any other reference)."""
        label = a.split(":", 1)[1] if a.startswith("label:") else PRODUCTION
        candidate: int | str | None
        if b_snap is None or b == "draft":
            candidate = None if b_snap is None else b_snap.get("text", "")
        elif b.startswith("label:"):
            candidate = obj.labels.select_related("version").get(name=b.split(":", 1)[1]).version.number
        else:
            candidate = int(b.lstrip("v"))
        return downstream(obj, label, candidate)

    def diff_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._entry(request, object_id)
        a = request.GET.get("a") or f"label:{PRODUCTION}"
        b = request.GET.get("b") or "draft"
        payloads: Payloads = {}
        a_name, a_snap = self._side(obj, a, payloads)
        b_name, b_snap = self._side(obj, b, payloads)
        choices = [("draft", _("current draft"))]
        choices += [(f"label:{label.name}", _("label %(label)s (v%(number)s)") % {"label": label.name,
                                                                               "number": label.version.number})
                    for label in obj.labels.all()]
        if not any(value == f"label:{PRODUCTION}" for value, _name in choices):
            choices.append((f"label:{PRODUCTION}", _("label production (not set)")))
        choices += [(f"v{v.number}", _("v%(number)s — %(note)s") % {"number": v.number, "note": v.change_note[:40]})
                    for v in obj.versions.all()]
        context = self._context(
            request, obj, _("Compare %(a)s with %(b)s") % {"a": a_name, "b": b_name},
            a=a, b=b, a_name=a_name, b_name=b_name, choices=choices,
            downstream=self._downstream(obj, a, b, b_snap) if isinstance(obj, Snippet) else None,
            diff=build(obj.kind, a_snap, b_snap, before_name=a_name, after_name=b_name,
                       load=diff_loader(payloads)),
        )
        return TemplateResponse(request, "admin/registry/diff.html", context)
