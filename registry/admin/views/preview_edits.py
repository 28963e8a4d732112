"""Preview of unsaved edits, on every kind's change page and on its add page. Never writes anything.

Editors want to see an edit before keeping it, and a brand-new entry before its first save. The
posted change form and its inlines are validated as a save would validate them, but nothing is
saved: the entry and its rows are built in memory only (the whole view runs in a transaction that
is rolled back as well). What is shown comes from the kind's `preview_of`, the same rule the
saved-draft preview page uses (registry/admin/views/preview.py), so the two cannot disagree.
With JavaScript the panel under the form is filled in place (registry/static/registry/change_form.js);
without it the Preview button opens this page in a new tab, carrying the edits.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse, HttpResponseNotAllowed
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext as _

from registry.admin.forms.entry import live_forms
from registry.authoring.snapshots import Payloads

Rows = dict[str, list[Any]]  # formset prefix -> the live rows of that inline, in position order, unsaved


class PreviewEditsMixin:
    """Adds the URL names "preview_edits" (<id>/preview-edits/) and "add_preview_edits"
    (add/preview-edits/); each kind gives `posted_snapshot` and `preview_of` and its panel template."""

    preview_panel_template = ""

    def posted_snapshot(self, new_object: Any, rows: Rows, payloads: Payloads) -> dict[str, Any]:
        """The snapshot `new_object` (the posted form's values, in memory) with `rows` would have."""
        raise NotImplementedError

    def preview_of(self, data: Any, snapshot: dict[str, Any], payloads: Payloads) -> dict[str, Any]:
        """The preview's context for `snapshot`; `data`: the sample values asked for, or None."""
        raise NotImplementedError

    def preview_edits_urls(self) -> list[Any]:
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"  # type: ignore[attr-defined]
        wrap = self.admin_site.admin_view  # type: ignore[attr-defined]
        return [
            path("add/preview-edits/", wrap(self.preview_edits_view), name=f"{prefix}_add_preview_edits"),
            path("<path:object_id>/preview-edits/", wrap(self.preview_edits_view), name=f"{prefix}_preview_edits"),
        ]

    def preview_edits_url(self, obj: Any) -> str:
        prefix = f"admin:{self.opts.app_label}_{self.opts.model_name}"  # type: ignore[attr-defined]
        if obj is None or obj.pk is None:
            return reverse(f"{prefix}_add_preview_edits")
        return self._url("preview_edits", obj)  # type: ignore[attr-defined]

    def preview_edits_view(self, request: HttpRequest, object_id: str | None = None) -> HttpResponse:
        """Render what is in the change (or add) form, unsaved, as a client would get it."""
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        if object_id is None:
            if not self.has_add_permission(request):  # type: ignore[attr-defined]
                raise PermissionDenied
            obj = None
        else:
            obj = self._entry(request, object_id)  # type: ignore[attr-defined]
        context: dict[str, Any] = {"errors": []}
        payloads: Payloads = {}
        with transaction.atomic():
            snapshot = self._snapshot_of_posted_form(request, obj, context["errors"], payloads)
            # Belt and braces: whatever a form or signal might have written is undone.
            transaction.set_rollback(True)
        if snapshot is not None:
            context.update(self.preview_of(request.POST if "preview" in request.POST else None, snapshot, payloads))
        context["form_url"] = self.preview_edits_url(obj)
        context["panel_template"] = self.preview_panel_template
        if request.headers.get("X-Registry-Fragment"):
            return TemplateResponse(request, self.preview_panel_template, context)
        # Without JavaScript the page opens on its own; its form carries the edits again.
        context["carried"] = [(key, value) for key, values in request.POST.lists() for value in values
                              if key != "preview" and not key.startswith(("arg-", "sample-"))]
        if obj is not None:
            context = self._context(  # type: ignore[attr-defined]
                request, obj, _("Preview of your unsaved edits of %(key)s") % {"key": obj.key}, **context)
        else:
            context.update(self.admin_site.each_context(request),  # type: ignore[attr-defined]
                           opts=self.opts,  # type: ignore[attr-defined]
                           title=_("Preview of your new %(thing)s") % {
                               "thing": self.opts.verbose_name})  # type: ignore[attr-defined]
        return TemplateResponse(request, "admin/registry/preview_edits.html", context)

    def _snapshot_of_posted_form(self, request: HttpRequest, obj: Any, errors: list[str],
                                 payloads: Payloads) -> dict[str, Any] | None:
        """The snapshot the posted form would save, or None with `errors` filled in.

        `payloads` collects the bytes of files it references (uploads included), so the preview
        can show them without anything being written to the content store."""
        change = obj is not None
        form = self.get_form(request, obj, change=change)(  # type: ignore[attr-defined]
            request.POST, request.FILES, instance=obj)
        form.is_valid()
        # Someone else's newer save does not stop a preview; saving will still warn about it.
        errors.extend(" ".join(e.messages) for key, errs in form.errors.as_data().items() for e in errs
                      if not (key == "__all__" and e.code == "draft_conflict"))
        new_object = form.instance  # validation has put the posted values on it, in memory
        formsets, _inlines = self._create_formsets(request, new_object, change=change)  # type: ignore[attr-defined]
        for formset in formsets:
            if not formset.is_valid():
                errors.extend(str(e) for e in formset.non_form_errors())
                for i, item in enumerate(formset.errors, start=1):
                    for field, messages_ in item.items():
                        errors.extend(f"{_inline_name(formset)} {i} › {_field_name(formset, field)}: {m}"
                                      for m in messages_)
        if errors:
            return None
        rows: Rows = {}
        for formset in formsets:
            live = sorted(live_forms(formset), key=lambda f: f.cleaned_data.get("position") or 0)
            rows[formset.prefix] = [f.instance for f in live]
        return self.posted_snapshot(new_object, rows, payloads)


def named(rows: list[Any]) -> list[Any]:
    """The rows of an inline of named things (arguments, variables) that have a name: a blank extra row is none."""
    return [row for row in rows if getattr(row, "name", "")]


def _inline_name(formset: Any) -> str:
    """'Argument' / 'Message' / 'Variable' (in the editor's language) for an error line of the inline."""
    names = {"arguments": _("Argument"), "messages": _("Message"), "variables": _("Variable")}
    return names.get(formset.prefix, formset.prefix.capitalize()[:-1])


def _field_name(formset: Any, field: str) -> str:
    form_field = formset.form.base_fields.get(field)
    return str(form_field.label) if form_field is not None and form_field.label else field
