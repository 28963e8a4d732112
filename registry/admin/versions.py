"""Published versions and release labels: read-only here; they change only through services."""

from __future__ import annotations

import json

from django.contrib import admin
from django.contrib.admin.views.main import ChangeList
from django.utils.html import format_html
from django.utils.translation import gettext_lazy as _

from registry.admin.access import InternalsMixin, ReadOnlyAdminMixin
from registry.admin.lookups import DeclaredFiltersOnlyMixin
from registry.models import (
    PromptLabel,
    PromptVersion,
    ResourceLabel,
    ResourceTemplateLabel,
    ResourceTemplateVersion,
    ResourceVersion,
    SnippetLabel,
    SnippetVersion,
)


class ListOnlyChangeList(ChangeList):
    """The lists show numbers and names: the frozen snapshots (whole documents) are not read for
    them (`list_defer` of the ModelAdmin); the change page still reads everything."""

    def get_queryset(self, request, exclude_parameters=None):
        return super().get_queryset(request, exclude_parameters).defer(*getattr(self.model_admin, "list_defer", ()))


class VersionAdmin(InternalsMixin, ReadOnlyAdminMixin, DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    list_display = ["entry", "number", "author_name", "created_at", "short_hash", "change_note"]
    list_select_related = ["entry"]
    list_defer = ["snapshot", "listing"]
    search_fields = ["change_note", "author_name"]
    date_hierarchy = "created_at"
    fields = ("entry", "number", "parent", "author_name", "created_at", "content_hash", "change_note", "snapshot_json")
    readonly_fields = fields

    def get_changelist(self, request, **kwargs):
        return ListOnlyChangeList

    @admin.display(description=_("hash"))
    def short_hash(self, obj) -> str:
        return obj.content_hash[:12]

    @admin.display(description=_("snapshot (what clients receive)"))
    def snapshot_json(self, obj) -> str:
        return format_html('<pre style="white-space:pre-wrap">{}</pre>',
                           json.dumps(obj.snapshot, indent=2, ensure_ascii=False))


class LabelAdmin(InternalsMixin, ReadOnlyAdminMixin, DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    list_display = ["entry", "name", "version", "protected", "moved_by", "moved_at"]
    # The version column reads "<entry key> v<n>": its entry too, or it is one query per row.
    list_select_related = ["entry", "version", "version__entry"]
    list_defer = ["version__snapshot", "version__listing"]
    list_filter = ["name"]

    def get_changelist(self, request, **kwargs):
        return ListOnlyChangeList


for version_model in (PromptVersion, ResourceVersion, ResourceTemplateVersion, SnippetVersion):
    admin.site.register(version_model, VersionAdmin)
for label_model in (PromptLabel, ResourceLabel, ResourceTemplateLabel, SnippetLabel):
    admin.site.register(label_model, LabelAdmin)
