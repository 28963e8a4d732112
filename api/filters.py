"""Query-parameter serializers: validated filters that also document themselves in the schema."""

from __future__ import annotations

from typing import Any

from django.db.models import Q, QuerySet
from rest_framework import serializers

from api.fields import StrictCharField
from registry.formats.folders import in_folder, tagged


class EntryFilterSerializer(serializers.Serializer):
    tag = StrictCharField(required=False, help_text="Only entries carrying this tag.")
    label = StrictCharField(  # type: ignore[assignment]  # a declared field, not Field.label
        required=False, help_text="Only entries that have this label.")
    archived = serializers.BooleanField(required=False, allow_null=True, default=None,
                                        help_text="true: only archived; false: only live; absent: both.")
    search = StrictCharField(required=False, help_text="Substring of key, name, title or description.")
    folder = StrictCharField(required=False, help_text="Only entries in this folder or one of its "
                                   "sub-folders ('support' also gives 'support/billing').")


def validated_params(serializer_class: type[serializers.Serializer], request: Any) -> dict[str, Any]:
    serializer = serializer_class(data=request.query_params)
    serializer.is_valid(raise_exception=True)
    return {k: v for k, v in serializer.validated_data.items() if v not in (None, "")}


def tag_q(tag: str) -> Q:
    """Tags are stored normalised as 'a, b, c' (the admin's tag filter asks the same)."""
    return tagged(tag)


def filter_entries(queryset: QuerySet, params: dict[str, Any], search_fields: tuple[str, ...]) -> QuerySet:
    if "tag" in params:
        queryset = queryset.filter(tag_q(params["tag"]))
    if "folder" in params:
        queryset = queryset.filter(in_folder(params["folder"]))
    if "label" in params:
        queryset = queryset.filter(labels__name=params["label"])
    if params.get("archived") is True:
        queryset = queryset.filter(archived_at__isnull=False)
    elif params.get("archived") is False:
        queryset = queryset.filter(archived_at__isnull=True)
    if "search" in params:
        q = Q()
        for field in search_fields:
            q |= Q(**{f"{field}__icontains": params["search"]})
        queryset = queryset.filter(q)
    return queryset.distinct()
