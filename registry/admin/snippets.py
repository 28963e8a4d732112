"""Snippets: shared parts of text that prompts, resources and templates include with {{> name }}.

The snippet's pages are the generic entry pages (registry/admin/entries.py); what is its own is
the argument inline, the preview (its text with the snippets it includes in turn expanded, as an
including entry served from production gets it) and the "Used by" panel.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.translation import gettext_lazy

from registry.admin.entries import VersionedEntryAdmin
from registry.admin.forms.snippets import SnippetArgumentForm, SnippetArgumentFormSet, SnippetForm
from registry.admin.prompts import OneBasedPositionInline
from registry.admin.views.preview_edits import Rows, named
from registry.authoring.composition import db_resolver
from registry.authoring.snapshots import Payloads, snapshot_snippet
from registry.formats.references import ExpansionError, expand
from registry.models import PRODUCTION, Snippet, SnippetArgument


class SnippetArgumentInline(OneBasedPositionInline):
    model = SnippetArgument
    form = SnippetArgumentForm
    formset = SnippetArgumentFormSet
    extra = 0
    ordering = ["position", "id"]
    fields = [("position", "name", "type"), "description"]


@admin.register(Snippet)
class SnippetAdmin(VersionedEntryAdmin):
    form = SnippetForm
    inlines = [SnippetArgumentInline]
    key_field = "name"
    preview_template = "admin/registry/snippet/preview.html"
    preview_panel_template = "admin/registry/snippet/_preview_panel.html"
    list_display = ["name", "description", "folder", "production_version", "updated_at"]
    search_fields = ["name", "description", "text", "tags"]
    fieldsets = [
        (None, {"fields": ["name", "description", "folder", "tags", "published_versions", "draft_revision"]}),
        (gettext_lazy("Text"), {
            "fields": ["text"],
            "description": gettext_lazy("Texts include this snippet with {{> name }} (the version on the label "
                                        "they are served from) or {{> name@3 }} (always version 3)."),
        }),
    ]

    def posted_snapshot(self, new_object: Snippet, rows: Rows, payloads: Payloads) -> dict[str, Any]:
        return snapshot_snippet(new_object, arguments=named(rows.get("arguments", [])))

    def preview_of(self, data: Any, snapshot: dict[str, Any], payloads: Payloads) -> dict[str, Any]:
        """The text as entries served from production include it, with its own snippets expanded."""
        context: dict[str, Any] = {"arguments": snapshot.get("arguments", []), "includes": snapshot.get("includes")}
        try:
            context["text"] = expand(snapshot.get("text", ""), db_resolver(PRODUCTION))
        except ExpansionError as exc:
            context["error"] = str(exc)
        return context
