"""Change-list filtering limited to the filters an admin declares.

Django's admin lets the address filter a change list (and this project's audit export) by any
lookup on the model's own fields, such as ``?changes__contains=x``; on SQLite that one is a
server error, and ``__regex`` runs a visitor's regular expression. Only the fields named in
``list_filter`` and ``date_hierarchy``, with the comparisons Django's own filters use, pass.
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.core.exceptions import FieldDoesNotExist
from django.db.models.constants import LOOKUP_SEP
from django.utils.text import capfirst
from django.utils.translation import gettext_lazy

from registry.kinds import KINDS, kind_name

# What Django's list filters and date hierarchy put in the address.
FILTER_LOOKUPS = frozenset({"exact", "isnull", "in", "gt", "gte", "lt", "lte", "year", "month", "day"})


def declared_filter_fields(model_admin: Any) -> set[str]:
    """Field names behind ``list_filter`` (names, (name, FilterClass) pairs, SimpleListFilter
    parameters) and ``date_hierarchy``."""
    names: set[str] = set()
    for item in model_admin.list_filter or ():
        if isinstance(item, str):
            names.add(item.split(LOOKUP_SEP)[0])
        elif isinstance(item, (list, tuple)) and item and isinstance(item[0], str):
            names.add(item[0].split(LOOKUP_SEP)[0])
        elif getattr(item, "parameter_name", None):  # a SimpleListFilter filters by its own parameter
            names.add(item.parameter_name)
    if model_admin.date_hierarchy:
        names.add(model_admin.date_hierarchy.split(LOOKUP_SEP)[0])
    return names


def _field(model: Any, name: str) -> Any:
    if model is None:
        return None
    try:
        return model._meta.get_field(name)
    except FieldDoesNotExist:
        return None


class DeclaredFiltersOnlyMixin:
    """For ModelAdmins: address lookups on model fields only through the declared filters."""

    def lookup_allowed(self, lookup: str, value: Any, request: Any = None) -> bool:
        parts = lookup.split(LOOKUP_SEP)
        model = self.model  # type: ignore[attr-defined]
        if _field(model, parts[0]) is None:
            # Not a field: a SimpleListFilter's own parameter, or an error Django reports itself.
            return super().lookup_allowed(lookup, value, request)  # type: ignore[misc]
        if parts[0] not in declared_filter_fields(self):
            return False
        for index, part in enumerate(parts):
            field = _field(model, part)
            if field is None:  # past the fields, only one comparison of Django's own filters may follow
                if index != len(parts) - 1 or part not in FILTER_LOOKUPS:
                    return False
                break
            model = field.related_model
        return super().lookup_allowed(lookup, value, request)  # type: ignore[misc]


class EntryKindFilter(admin.SimpleListFilter):
    """Filter rows by the kind of entry, offered by the kinds' names in the reader's language
    (Django's field filter would offer the stored codes: prompt, resource, template)."""

    title = gettext_lazy("entry kind")
    parameter_name = "entry_kind"

    def lookups(self, request: Any, model_admin: Any) -> list[tuple[str, str]]:
        return [(kind, capfirst(kind_name(kind))) for kind in KINDS]

    def queryset(self, request: Any, queryset: Any) -> Any:
        return queryset.filter(entry_kind=self.value()) if self.value() else queryset
