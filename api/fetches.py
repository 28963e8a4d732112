"""Fetch statistics: which client was served which version of which entry, how often, when last."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, viewsets
from rest_framework.request import Request
from rest_framework.response import Response

from api.fields import StrictCharField
from api.permissions import ReadModelPermission
from registry.kinds import SERVED_KINDS
from registry.models import FetchCounter


class FetchCounterSerializer(serializers.ModelSerializer):
    client = StrictCharField(source="client_name", help_text="Client name; '' for anonymous callers.")

    class Meta:
        model = FetchCounter
        fields = ["id", "client", "entry_kind", "entry_key", "version", "label", "count", "first_at", "last_at"]
        read_only_fields = fields


class FetchFilterSerializer(serializers.Serializer):
    client = StrictCharField(required=False, allow_blank=True,
                                   help_text="Exact client name ('' = anonymous callers).")
    entry_kind = serializers.ChoiceField(choices=list(SERVED_KINDS), required=False)  # what clients fetch
    entry_key = StrictCharField(required=False)
    version = serializers.IntegerField(required=False, min_value=1)
    label = StrictCharField(required=False)  # type: ignore[assignment]  # a declared field, not Field.label
    since = serializers.DateTimeField(required=False, help_text="Last fetched at or after (ISO 8601).")


class FetchViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Per-client fetch counters (written in batches by the MCP endpoint; a few seconds behind)."""

    queryset = FetchCounter.objects.all()
    serializer_class = FetchCounterSerializer
    permission_classes = [ReadModelPermission]

    @extend_schema(parameters=[FetchFilterSerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = FetchFilterSerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        params = serializer.validated_data
        queryset = self.get_queryset()
        if "client" in request.query_params:
            queryset = queryset.filter(client_name=params.get("client", ""))
        for param, field in (("entry_kind", "entry_kind"), ("entry_key", "entry_key"), ("version", "version"),
                             ("label", "label")):
            if param in params:
                queryset = queryset.filter(**{field: params[param]})
        if "since" in params:
            queryset = queryset.filter(last_at__gte=params["since"])
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(FetchCounterSerializer(page, many=True).data)

