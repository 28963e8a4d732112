"""Review requests (four eyes): list, request publication, approve (now or at a go-live time), reject,
withdraw, ask for changes, ask again; their discussion; scheduled releases: list, move, cancel.

The rules (a different publisher decides, a stale request cannot be approved, approval moves
the protected label) live in `registry.release.reviews`; this module only adapts HTTP to them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db.models import Prefetch, QuerySet
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api.fields import StrictCharField
from api.filters import validated_params
from api.permissions import ReadModelPermission, requires
from registry.errors import ReviewClosed
from registry.kinds import KINDS
from registry.models import PRODUCTION, ReviewComment, ReviewRequest, ReviewStatus, ScheduledRelease, ScheduleStatus
from registry.models.base import label_name_validator
from registry.release import discussion as discussion_service
from registry.release import reviews as reviews_service
from registry.release import schedules as schedules_service
from registry.release.labels import check_known_label


class ReviewSerializer(serializers.ModelSerializer):
    go_live_at = serializers.SerializerMethodField(help_text="When the approved release goes live (scheduled).")

    class Meta:
        model = ReviewRequest
        fields = ["id", "entry_kind", "entry_id", "entry_key", "label", "version_number", "content_hash",
                  "base_version", "percent", "requested_by_name", "note", "status", "decided_by_name",
                  "decision_comment", "result_version", "created_at", "decided_at", "changes_requested_at",
                  "went_stale_at", "previous", "go_live_at"]
        read_only_fields = fields

    def get_go_live_at(self, review: ReviewRequest) -> str | None:
        waiting = getattr(review, "waiting_schedules", None)  # prefetched for a page (with_schedules)
        if waiting is None:
            waiting = list(review.schedules.filter(status=ScheduleStatus.SCHEDULED)[:1])
        return serializers.DateTimeField().to_representation(waiting[0].go_live_at) if waiting else None


def with_schedules(queryset: QuerySet[ReviewRequest]) -> QuerySet[ReviewRequest]:
    """`queryset` with each request's waiting scheduled release read for the whole page in one query."""
    return queryset.prefetch_related(Prefetch(
        "schedules", queryset=ScheduledRelease.objects.filter(status=ScheduleStatus.SCHEDULED),
        to_attr="waiting_schedules"))


class CommentSerializer(serializers.ModelSerializer):
    class Meta:
        model = ReviewComment
        fields = ["id", "review", "kind", "author_name", "text", "created_at"]
        read_only_fields = fields


class CommentCreateSerializer(serializers.Serializer):
    text = StrictCharField(help_text="The comment (never edited afterwards).")


class ScheduledReleaseSerializer(serializers.ModelSerializer):
    entry_kind = StrictCharField(source="review.entry_kind", read_only=True)
    entry_key = StrictCharField(source="review.entry_key", read_only=True)
    label = StrictCharField(source="review.label", read_only=True)  # type: ignore[assignment]

    class Meta:
        model = ScheduledRelease
        fields = ["id", "review", "entry_kind", "entry_key", "label", "go_live_at", "status", "scheduled_by_name",
                  "created_at", "finished_at", "finished_by_name", "outcome", "result_version"]
        read_only_fields = fields


class CancelSerializer(serializers.Serializer):
    reason = StrictCharField(required=False, allow_blank=True, default="")


class RescheduleSerializer(serializers.Serializer):
    go_live_at = serializers.DateTimeField(
        help_text="The new go-live time (ISO 8601; without an offset: the server's time zone); in the future.")


class ScheduleFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=ScheduleStatus.choices, required=False,
                                     help_text="Default: scheduled (what is waiting for its time).")


class ReviewCreateSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=sorted(KINDS), help_text="prompt, resource, template or snippet.")
    key = StrictCharField(max_length=2048, help_text="Prompt name, resource URI or URI template.")
    label = StrictCharField(  # type: ignore[assignment]  # a declared field, not Field.label
        max_length=40, validators=[label_name_validator], default=PRODUCTION)
    version = serializers.IntegerField(min_value=1, required=False, allow_null=True,
                                       help_text="An existing version to serve; absent: publish the current draft.")
    percent = serializers.IntegerField(min_value=1, max_value=99, required=False, allow_null=True,
                                       help_text="Ask for a percentage rollout instead of a full release.")
    note = StrictCharField(help_text="What should be released and why.")
    new_label = serializers.BooleanField(
        default=False, help_text="Confirm that `label` is new: without it a label no entry or client uses "
                                 "(most likely a typo, e.g. 'prodution') is refused with 400.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        kind = KINDS[attrs["kind"]]
        entry = kind.entry_model.objects.filter(**{kind.key_field: attrs["key"]}).first()
        if entry is None:
            raise serializers.ValidationError({"key": [f"No {attrs['kind']} with {kind.key_field} {attrs['key']}."]})
        try:
            check_known_label(attrs["label"], confirmed=attrs["new_label"])
        except DjangoValidationError as exc:
            raise serializers.ValidationError({"label": exc.messages}, code="unknown_label") from exc
        attrs["entry"] = entry
        return attrs


class DecisionSerializer(serializers.Serializer):
    comment = StrictCharField(required=False, allow_blank=True, default="")
    go_live_at = serializers.DateTimeField(
        required=False, allow_null=True, default=None,
        help_text="Approve now and release at this time (ISO 8601; without an offset: the server's time zone).")


class RejectionSerializer(serializers.Serializer):
    comment = StrictCharField(help_text="Required: why it is rejected.")


class ReviewFilterSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=ReviewStatus.choices, required=False)
    kind = serializers.ChoiceField(choices=sorted(KINDS), required=False)
    key = StrictCharField(required=False)
    label = StrictCharField(required=False)  # type: ignore[assignment]  # a declared field, not Field.label


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
        page = self.paginate_queryset(with_schedules(queryset))
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
        return self._decide(partial(reviews_service.approve, acting_user=request.user, comment=params["comment"],
                                    go_live_at=params["go_live_at"]))

    @extend_schema(request=RejectionSerializer, responses=ReviewSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        params = _valid(RejectionSerializer, request)
        return self._decide(partial(reviews_service.reject, acting_user=request.user, comment=params["comment"]))

    @extend_schema(request=None, responses=ReviewSerializer)
    @action(detail=True, methods=["post"])
    def withdraw(self, request: Request, pk: str) -> Response:
        return self._decide(partial(reviews_service.withdraw, acting_user=request.user))

    @extend_schema(request=RejectionSerializer, responses=ReviewSerializer)
    @action(detail=True, methods=["post"], url_path="request-changes")
    def request_changes(self, request: Request, pk: str) -> Response:
        """A reviewer asks for changes (the request stays open; the comment tells the requester what)."""
        params = _valid(RejectionSerializer, request)
        return self._decide(partial(discussion_service.request_changes, acting_user=request.user,
                                    text=params["comment"]))

    @extend_schema(request=None, responses={201: ReviewSerializer})
    @action(detail=True, methods=["post"], url_path="request-again")
    def request_again(self, request: Request, pk: str) -> Response:
        """The requester asks again, with the current draft, for what a stale or failed request asked."""
        again = reviews_service.request_again(self._review(), acting_user=request.user)
        return Response(ReviewSerializer(again).data, status=status.HTTP_201_CREATED)

    @extend_schema(methods=["GET"], request=None, responses=CommentSerializer(many=True))
    @extend_schema(methods=["POST"], request=CommentCreateSerializer, responses={201: CommentSerializer})
    @action(detail=True, methods=["get", "post"])
    def comments(self, request: Request, pk: str) -> Response:
        """The discussion (this request's comments and those of the requests it asks again), oldest first;
        POST adds one (the requester and the publishers who may decide it)."""
        review = self._review()
        if request.method == "POST":
            params = _valid(CommentCreateSerializer, request)
            comment = discussion_service.comment(review, acting_user=request.user, text=params["text"])
            return Response(CommentSerializer(comment).data, status=status.HTTP_201_CREATED)
        return Response(CommentSerializer(discussion_service.discussion(review), many=True).data)

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


class ScheduledReleaseViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Approved releases waiting for (or past) their go-live time; move one's go-live time, cancel one."""

    queryset = ScheduledRelease.objects.select_related("review").order_by("go_live_at", "id")
    serializer_class = ScheduledReleaseSerializer
    permission_classes = [requires("registry.view_reviewrequest")]

    @extend_schema(parameters=[ScheduleFilterSerializer])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = validated_params(ScheduleFilterSerializer, request)
        queryset = self.get_queryset().filter(status=params.get("status", ScheduleStatus.SCHEDULED))
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(ScheduledReleaseSerializer(page, many=True).data)

    @extend_schema(request=RescheduleSerializer, responses=ScheduledReleaseSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        """Move the go-live time (a publisher who may decide the request; audited as the admin's Move is)."""
        params = _valid(RescheduleSerializer, request)
        row = self._scheduled(pk)
        schedules_service.reschedule(row.review, acting_user=request.user, go_live_at=params["go_live_at"])
        row.refresh_from_db()
        return Response(ScheduledReleaseSerializer(row).data)

    @extend_schema(request=CancelSerializer, responses=ScheduledReleaseSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        """Nothing goes live; the request waits for a decision again (its requester or a publisher who may
        decide it)."""
        params = _valid(CancelSerializer, request)
        row = self._scheduled(pk)
        schedules_service.cancel(row.review, acting_user=request.user, reason=params["reason"])
        row.refresh_from_db()
        return Response(ScheduledReleaseSerializer(row).data)

    def _scheduled(self, pk: str) -> ScheduledRelease:
        """The release in the path, still waiting for its time (409 once done, failed or cancelled)."""
        row = get_object_or_404(ScheduledRelease.objects.select_related("review"), pk=pk)
        if row.status != ScheduleStatus.SCHEDULED:
            raise ReviewClosed(f"The release #{row.pk} is {row.get_status_display()}, not scheduled any more.")
        return row
