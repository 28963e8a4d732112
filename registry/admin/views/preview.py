"""The preview page: the current draft rendered exactly as a client would get it. Never writes anything.

Each kind says what its preview shows (`preview_of`, also the rule of the preview of unsaved edits:
registry/admin/views/preview_edits.py) and with which template (`preview_template`).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from registry.admin.views.entry_page import EntryPageMixin
from registry.admin.views.preview_edits import PreviewEditsMixin
from registry.authoring.snapshots import Payloads, snapshot_of


class PreviewPageMixin(PreviewEditsMixin, EntryPageMixin):
    """Adds the preview page (URL name "preview") and the preview of unsaved edits; each kind sets
    its templates and `preview_of`."""

    preview_template = ""

    def preview_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:  # obj: the admin's own model
        payloads: Payloads = {}
        snapshot = snapshot_of(obj, payloads)
        return {"saved": True, **self.preview_of(request.GET if "preview" in request.GET else None, snapshot, payloads)}

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Render the current draft exactly as a client would get it. Never writes anything."""
        obj = self._entry(request, object_id)
        context = self._context(request, obj, _("Preview of the draft of %(key)s") % {"key": obj.key},
                                **self.preview_context(request, obj))
        return TemplateResponse(request, self.preview_template, context)
