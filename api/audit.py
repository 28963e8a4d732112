"""The audit log: filtered list (view_auditentry) and CSV/JSON export (export_auditentry)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import Q, QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.fields import StrictCharField
from api.filters import validated_params
from api.permissions import ReadModelPermission, requires
from registry.kinds import KINDS
from registry.models import AuditAction, AuditEntry
from registry.release.audit_export import EXPORT_FORMATS, export_response


class AuditEntrySerializer(serializers.ModelSerializer):
    class Meta:
        model = AuditEntry
        fields = ["id", "created_at", "actor_name", "action", "entry_kind", "entry_key", "entry_id", "label",
                  "from_version", "to_version", "note", "changes"]
        read_only_fields = fields


class AuditFilterSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=AuditAction.choices, required=False)
    entry_kind = serializers.ChoiceField(choices=list(KINDS), required=False)  # every kind is audited
    entry_key = StrictCharField(required=False, help_text="Exact prompt name, resource URI or URI template.")
    actor = StrictCharField(required=False, help_text="Exact user name (or tool) that acted.")
    label = StrictCharField(required=False)  # type: ignore[assignment]  # a declared field, not Field.label
    since = serializers.DateTimeField(required=False, help_text="ISO 8601; entries at or after.")
    until = serializers.DateTimeField(required=False, help_text="ISO 8601; entries before.")
    search = StrictCharField(required=False, help_text="Substring of key, actor, note or label.")


# "as" is a Python keyword, so this serializer is built with type().
AuditExportFilterSerializer = type("AuditExportFilterSerializer", (AuditFilterSerializer,), {
    "as": serializers.ChoiceField(choices=list(EXPORT_FORMATS), default="csv", help_text="Export format."),
})


def filtered(queryset: QuerySet, params: dict[str, Any]) -> QuerySet:
    for param, field in (("action", "action"), ("entry_kind", "entry_kind"), ("entry_key", "entry_key"),
                         ("actor", "actor_name"), ("label", "label")):
        if param in params:
            queryset = queryset.filter(**{field: params[param]})
    if "since" in params:
        queryset = queryset.filter(created_at__gte=params["since"])
    if "until" in params:
        queryset = queryset.filter(created_at__lt=params["until"])
    if "search" in params:
        term = params["search"]
        queryset = queryset.filter(Q(entry_key__icontains=term) | Q(actor_name__icontains=term)
                                   | Q(note__icontains=term) | Q(label__icontains=term))
    return queryset


class AuditViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Who did what to which entry, when and why, with the field-level diff. Newest first."""

    queryset = AuditEntry.objects.all()
    serializer_class = AuditEntrySerializer
    permission_classes = [ReadModelPermission]

    def get_permissions(self) -> Sequence[Any]:
        if self.action == "export":
            return [requires("registry.view_auditentry", "registry.export_auditentry", safe_only=True)()]
        return super().get_permissions()

    @extend_schema(parameters=[AuditFilterSerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        queryset = filtered(self.get_queryset(), validated_params(AuditFilterSerializer, request))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(AuditEntrySerializer(page, many=True).data)

    @extend_schema(
        parameters=[AuditExportFilterSerializer],
        responses={(200, "text/csv"): OpenApiResponse(OpenApiTypes.STR, description="CSV, one row per entry"),
                   (200, "application/json"): OpenApiResponse(OpenApiTypes.OBJECT,
                                                              description="{count, entries: [...]}")},
    )
    @action(detail=False, methods=["get"])
    def export(self, request: Request) -> HttpResponse:
        """Every entry matching the filters (no pagination), as CSV (formulas defused) or JSON."""
        params = validated_params(AuditExportFilterSerializer, request)
        return export_response(filtered(self.get_queryset(), params).iterator(), params.get("as", "csv"))
