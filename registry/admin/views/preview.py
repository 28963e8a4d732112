"""The preview page: the current draft rendered exactly as a client would get it. Never writes anything.

Each kind says what its preview shows (`preview_context`) and with which template
(`preview_template`); prompts add a preview of unsaved edits (registry/admin/prompts.py).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from registry.admin.views.entry_page import EntryPageMixin


class PreviewPageMixin(EntryPageMixin):
    """Adds the preview page (URL name "preview"); each kind sets its template and `preview_context`."""

    preview_template = ""

    def preview_context(self, request: HttpRequest, obj: Any) -> dict[str, Any]:  # obj: the admin's own model
        raise NotImplementedError

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Render the current draft exactly as a client would get it. Never writes anything."""
        obj = self._entry(request, object_id)
        context = self._context(request, obj, _("Preview of the draft of %(key)s") % {"key": obj.key},
                                **self.preview_context(request, obj))
        return TemplateResponse(request, self.preview_template, context)
