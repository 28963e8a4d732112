"""The entry change lists' filters: folder (with its sub-folders), tag, label served, state and kind.

Each filter reads its choices in one query and narrows the list in SQL (a subquery), except the
state filter, whose states are the badges' own (registry/admin/badges.py): it reads the entries
that could be in the state with everything the badges need in a fixed number of queries
(`badges.entries_in_state`), so a list stays fixed-query with any filter chosen
(tests/registry/test_admin_list_queries.py). Values that name nothing in the database
("/" the top-level folder, "-" no label) cannot be a folder or a label name.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.utils.translation import gettext_lazy

from registry.admin.badges import STATE_TONES, entries_in_state
from registry.formats.folders import folder_and_parents, in_folder, tagged
from registry.kinds import KINDS
from registry.models import ContentKind, Prompt, PromptMessage, Resource

TOP_LEVEL = "/"  # never a folder path (no leading slash)
NO_LABEL = "-"  # never a label name (they start with a letter or digit)


class FolderFilter(admin.SimpleListFilter):
    """A folder and everything under it: choosing 'support' lists 'support/billing' too."""

    title = gettext_lazy("folder")
    parameter_name = "folder"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, Any]]:
        # order_by(): the model's default ordering would join its column to the DISTINCT, one row per entry.
        used = set(model_admin.model.objects.exclude(folder="").values_list("folder", flat=True).order_by().distinct())
        return [(TOP_LEVEL, gettext_lazy("(no folder)")),
                *((folder, folder) for folder in folder_and_parents(used))]

    def queryset(self, request: Any, queryset: Any) -> Any:
        value = self.value()
        if value == TOP_LEVEL:
            return queryset.filter(folder="")
        return queryset.filter(in_folder(value)) if value else queryset


class TagFilter(admin.SimpleListFilter):
    title = gettext_lazy("tag")
    parameter_name = "tag"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        stored = model_admin.model.objects.exclude(tags="").values_list("tags", flat=True).order_by().distinct()
        tags = sorted({tag.strip() for row in stored for tag in row.split(",") if tag.strip()})
        return [(tag, tag) for tag in tags]

    def queryset(self, request: Any, queryset: Any) -> Any:
        value = self.value()
        return queryset.filter(tagged(value)) if value else queryset


class ServedLabelFilter(admin.SimpleListFilter):
    """Entries a label points at ('production' serves something of them), or none does."""

    title = gettext_lazy("label served")
    parameter_name = "served_label"

    def _labels(self, model: Any) -> Any:
        return KINDS[model.kind].label_model.objects

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, Any]]:
        names = self._labels(model_admin.model).values_list("name", flat=True).distinct().order_by("name")
        return [*((name, name) for name in names), (NO_LABEL, gettext_lazy("(no label: not published)"))]

    def queryset(self, request: Any, queryset: Any) -> Any:
        if not self.value():
            return queryset
        labels = self._labels(queryset.model)
        if self.value() == NO_LABEL:
            return queryset.exclude(pk__in=labels.values("entry_id"))
        return queryset.filter(pk__in=labels.filter(name=self.value()).values("entry_id"))


class StateFilter(admin.SimpleListFilter):
    """The states the list's badges show: the same rule decides both (`badges.entries_in_state`)."""

    title = gettext_lazy("state")
    parameter_name = "state"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, Any]]:
        return list(STATE_TONES.items())

    def queryset(self, request: Any, queryset: Any) -> Any:
        value = self.value()
        if value not in STATE_TONES:
            return queryset
        return queryset.filter(pk__in=entries_in_state(queryset, str(value)))


class KindFilter(admin.SimpleListFilter):
    """What an entry holds: a prompt by the kinds of its messages, a resource text or a file."""

    title = gettext_lazy("kind")
    parameter_name = "content_kind"
    TEXT, FILE = "text", "file"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, Any]]:
        if issubclass(model_admin.model, Prompt):
            return list(ContentKind.choices)
        return [(self.TEXT, gettext_lazy("Text")), (self.FILE, gettext_lazy("File (bytes)"))]

    def queryset(self, request: Any, queryset: Any) -> Any:
        value = self.value()
        if not value:
            return queryset
        if issubclass(queryset.model, Prompt):
            return queryset.filter(pk__in=PromptMessage.objects.filter(kind=value).values("prompt_id"))
        if issubclass(queryset.model, Resource):
            if value == self.FILE:
                return queryset.exclude(data_sha256="")
            if value == self.TEXT:
                return queryset.filter(data_sha256="")
        return queryset


ENTRY_FILTERS = [FolderFilter, TagFilter, ServedLabelFilter, StateFilter]
