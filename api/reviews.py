"""Review requests (four eyes): list, request publication, approve, reject, withdraw.

The rules (a different publisher decides, a stale request cannot be approved, approval moves
the protected label) live in `registry.release.reviews`; this module only adapts HTTP to them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.filters import validated_params
from api.permissions import ReadModelPermission
from registry.kinds import KINDS
from registry.models import PRODUCTION, ReviewRequest, ReviewStatus
from registry.models.base import label_name_validator
from registry.release import reviews as reviews_service


class ReviewSerializer(serializers.ModelSerializer):
    class Meta:
        model = ReviewRequest
        fields = ["id", "entry_kind", "entry_id", "entry_key", "label", "version_number", "content_hash",
                  "base_version", "percent", "requested_by_name", "note", "status", "decided_by_name",
                  "decision_comment", "result_version", "created_at", "decided_at"]
        read_only_fields = fields


class ReviewCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=sorted(KINDS), help_text="prompt, resource or template.")
    key = serializers.CharField(max_length=2048, help_text="Prompt name, resource URI or URI template.")
    label = serializers.CharField(  # type: ignore[assignment]  # a declared field, not Field.label
        max_length=40, validators=[label_name_validator], default=PRODUCTION)
    version = serializers.IntegerField(min_value=1, required=False, allow_null=True,
                                       help_text="An existing version to serve; absent: publish the current draft.")
    percent = serializers.IntegerField(min_value=1, max_value=99, required=False, allow_null=True,
                                       help_text="Ask for a percentage rollout instead of a full release.")
    note = serializers.CharField(help_text="What should be released and why.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind = KINDS[attrs["kind"]]
        entry = kind.entry_model.objects.filter(**{kind.key_field: attrs["key"]}).first()
        if entry is None:
            raise serializers.ValidationError({"key": [f"No {attrs['kind']} with {kind.key_field} {attrs['key']}."]})
        attrs["entry"] = entry
        return attrs


class DecisionSerializer(serializers.Serializer):
    comment = serializers.CharField(required=False, allow_blank=True, default="")


class RejectionSerializer(serializers.Serializer):
    comment = serializers.CharField(help_text="Required: why it is rejected.")


class ReviewFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=ReviewStatus.choices, required=False)
    kind = serializers.ChoiceField(choices=sorted(KINDS), required=False)
    key = serializers.CharField(required=False)
    label = serializers.CharField(required=False)  # type: ignore[assignment]  # a declared field, not Field.label


class ReviewViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                    viewsets.GenericViewSet):
    """The review queue. Editors request; another publisher approves or rejects."""

    queryset = ReviewRequest.objects.all()
    serializer_class = ReviewSerializer
    permission_classes = [ReadModelPermission]

    def get_serializer_class(self):
        return ReviewCreateSerializer if self.action == "create" else ReviewSerializer

    @extend_schema(parameters=[ReviewFilterSerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = validated_params(ReviewFilterSerializer, request)
        queryset = self.get_queryset()
        for param, field in (("status", "status"), ("kind", "entry_kind"), ("key", "entry_key"), ("label", "label")):
            if param in params:
                queryset = queryset.filter(**{field: params[param]})
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(ReviewSerializer(page, many=True).data)

    @extend_schema(request=ReviewCreateSerializer, responses={201: ReviewSerializer})
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = ReviewCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        params = serializer.validated_data
        entry = params["entry"]
        review = reviews_service.request_publication(entry, acting_user=request.user, note=params["note"],
                                                     label=params["label"], version_number=params.get("version"),
                                                     percent=params.get("percent"))
        return Response(ReviewSerializer(review).data, status=status.HTTP_201_CREATED)

    def _review(self) -> ReviewRequest:
        return get_object_or_404(ReviewRequest, pk=self.kwargs["pk"])

    @extend_schema(request=DecisionSerializer, responses=ReviewSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        params = _valid(DecisionSerializer, request)
        return self._decide(partial(reviews_service.approve, acting_user=request.user, comment=params["comment"]))

    @extend_schema(request=RejectionSerializer, responses=ReviewSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        params = _valid(RejectionSerializer, request)
        return self._decide(partial(reviews_service.reject, acting_user=request.user, comment=params["comment"]))

    @extend_schema(request=None, responses=ReviewSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        return self._decide(partial(reviews_service.withdraw, acting_user=request.user))

    def _decide(self, decision: Callable[[ReviewRequest], Any]) -> Response:
        """Apply `decision` to the review in the path and answer with the review as the service saved it."""
        review = self._review()
        decision(review)
        review.refresh_from_db()
        return Response(ReviewSerializer(review).data)


def _valid(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)
