"""Prompts, resources and templates: drafts, versions, labels and the release actions.

Prompts are addressed by name in the path (/prompts/code-review/). Resource URIs and URI
templates contain '/' and '//', which proxies and path normalisation mangle, so resources and
templates are addressed by id in the path and found by key with a query parameter
(/resources/lookup/?uri=docs://style-guide, or ?uri=... on the list).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Max, Prefetch
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from api import rollouts as rollout_api
from api.drafts import PromptSerializer, ResourceSerializer, SnippetSerializer, TemplateSerializer
from api.errors import etag
from api.fields import StrictCharField
from api.filters import EntryFilterSerializer, filter_entries, validated_params
from api.permissions import ModelPermissions, ReadModelPermission
from api.versions import (
    LabelSerializer,
    MoveLabelRequestSerializer,
    NoteSerializer,
    PublishedVersionSerializer,
    PublishRequestSerializer,
    RollbackRequestSerializer,
    VersionSerializer,
    VersionSummarySerializer,
)
from registry.authoring.drafts import lock_draft
from registry.authoring.snapshots import with_content
from registry.errors import ContentMissing
from registry.formats.uris import lookup_uri, normalize_uri_template
from registry.kinds import KINDS
from registry.models import Prompt, Resource, ResourceTemplate, Snippet
from registry.release import reviews, services, uses


class EntrySummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = StrictCharField()
    key = StrictCharField(help_text="Prompt name, resource URI or URI template.")
    name = StrictCharField()
    title = serializers.SerializerMethodField()
    description = StrictCharField()
    tags = serializers.SerializerMethodField()
    folder = StrictCharField(help_text="Where editors find it ('' the top level); not served to clients.")
    archived_at = serializers.DateTimeField(allow_null=True)
    updated_at = serializers.DateTimeField()
    latest_version = serializers.IntegerField(allow_null=True)
    labels = serializers.SerializerMethodField(help_text="Label name -> version number it serves.")

    def get_title(self, entry: Any) -> str:
        return getattr(entry, "title", "")  # snippets have none

    def get_tags(self, entry: Any) -> list[str]:
        return sorted(entry.tag_set)

    def get_labels(self, entry: Any) -> dict[str, int]:
        return {label.name: label.version.number for label in entry.labels.all()}

    # drf-spectacular reads the return annotations above for the schema types.


class EntryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin,
                   mixins.UpdateModelMixin, viewsets.GenericViewSet):
    """Shared by the three kinds; each subclass names its model, serializer and search fields."""

    kind: str
    search_fields: tuple[str, ...]
    serializer_class: type[serializers.Serializer]
    filter_serializer: type[serializers.Serializer]
    permission_classes = [ModelPermissions]
    # Reads of versions/labels/rollouts need the view permission; release actions too, because the
    # services check publish rights and approvals themselves (403/409 from there).
    read_permission_actions = {"versions", "version", "labels", "rollouts", "lookup", "used_by",
                               "publish", "move_label", "rollback", "archive", "unarchive", "rollout"}

    def get_permissions(self) -> Sequence[Any]:
        if self.action in self.read_permission_actions:
            return [ReadModelPermission()]
        return super().get_permissions()

    def get_queryset(self):
        kind = KINDS[self.kind]
        queryset = kind.entry_model.objects.all()
        if self.action == "list":
            queryset = queryset.annotate(latest_version=Max("versions__number")).prefetch_related(
                Prefetch("labels", queryset=kind.label_model.objects.select_related("version"))
            )
        return queryset.order_by(kind.key_field)

    def get_serializer_class(self):
        if self.action == "list":
            return EntrySummarySerializer
        return self.serializer_class

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        params = validated_params(self.filter_serializer, request)
        queryset = filter_entries(self.get_queryset(), params, self.search_fields)
        key_field = KINDS[self.kind].key_field
        if params.get(key_field):
            queryset = queryset.filter(**{key_field: stored_key(key_field, params[key_field])})
        page = self.paginate_queryset(queryset)
        return self.get_paginated_response(EntrySummarySerializer(page, many=True).data)

    def _respond_with_entry(self, serializer: Any, code: int) -> Response:
        return Response(serializer.data, status=code, headers={"ETag": etag(serializer.instance.revision)})

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return self._respond_with_entry(self.get_serializer(self.get_object()), status.HTTP_200_OK)

    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        serializer.save()
        return self._respond_with_entry(serializer, status.HTTP_201_CREATED)

    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """PUT/PATCH on the locked, current row; `If-Match: "<revision>"` (the ETag of a read) refuses a
        write based on an older revision with 412, so two clients never silently revert each other."""
        partial = kwargs.pop("partial", False)
        expected = if_match_revision(request)
        with transaction.atomic():
            instance = lock_draft(self.get_object(), expected_revision=expected)
            serializer = self.get_serializer(instance, data=request.data, partial=partial)
            serializer.is_valid(raise_exception=True)
            serializer.save()
        return self._respond_with_entry(serializer, status.HTTP_200_OK)

    # ---------------------------------------------------------------------------- versions & labels
    @extend_schema(responses=VersionSummarySerializer(many=True))
    @action(detail=True, methods=["get"])
    def versions(self, request: Request, **kwargs: Any) -> Response:
        entry = self.get_object()
        versions = entry.versions.order_by("-number").prefetch_related("labels")
        page = self.paginate_queryset(versions)
        return self.get_paginated_response(VersionSummarySerializer(page, many=True).data)

    @extend_schema(responses=VersionSerializer,
                   parameters=[OpenApiParameter("number", int, OpenApiParameter.PATH, description="Version number"),
                               OpenApiParameter("content", str, enum=["inline"], required=False,
                                                description="`inline`: documents as text/base64 instead of "
                                                            "sha256 references")])
    @action(detail=True, methods=["get"], url_path=r"versions/(?P<number>[0-9]+)")
    def version(self, request: Request, number: str, **kwargs: Any) -> Response:
        entry = self.get_object()
        version = get_object_or_404(entry.versions.prefetch_related("labels"), number=int(number))
        data = VersionSerializer(version).data
        if request.query_params.get("content") == "inline":
            try:
                data["snapshot"] = with_content(version.snapshot)
            except ContentMissing as exc:
                return Response({"detail": exc.message, "sha256": exc.sha256}, status=status.HTTP_409_CONFLICT)
        return Response(data)

    @extend_schema(responses=LabelSerializer(many=True))
    @action(detail=True, methods=["get"])
    def labels(self, request: Request, **kwargs: Any) -> Response:
        entry = self.get_object()
        return Response(LabelSerializer(entry.labels.select_related("version"), many=True).data)

    # ---------------------------------------------------------------------------- release actions
    @extend_schema(request=PublishRequestSerializer, responses={201: PublishedVersionSerializer})
    @action(detail=True, methods=["post"])
    def publish(self, request: Request, **kwargs: Any) -> Response:
        entry = self.get_object()
        params = _valid(PublishRequestSerializer, request)
        override_reason = params.get("override_reason") or None
        if not params.get("request_review"):
            version = services.publish(entry, acting_user=request.user, note=params["note"], labels=params["labels"],
                                       override_reason=override_reason)
            return Response(VersionSerializer(version).data, status=status.HTTP_201_CREATED)
        version, filed = reviews.publish_or_request(entry, acting_user=request.user, note=params["note"],
                                                    labels=params["labels"], override_reason=override_reason)
        version.review_requests = [review.pk for review in filed]
        return Response(PublishedVersionSerializer(version).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MoveLabelRequestSerializer, responses=LabelSerializer)
    @action(detail=True, methods=["post"], url_path="move-label")
    def move_label(self, request: Request, **kwargs: Any) -> Response:
        entry = self.get_object()
        params = _valid(MoveLabelRequestSerializer, request)
        label = services.move_label(entry, label=params["label"], version_number=params["version"],
                                    acting_user=request.user, note=params["note"],
                                    override_reason=params.get("override_reason") or None)
        return Response(LabelSerializer(label).data)

    @extend_schema(request=RollbackRequestSerializer, responses=LabelSerializer)
    @action(detail=True, methods=["post"])
    def rollback(self, request: Request, **kwargs: Any) -> Response:
        entry = self.get_object()
        params = _valid(RollbackRequestSerializer, request)
        label = services.rollback(entry, acting_user=request.user, note=params["note"], label=params["label"],
                                  to_version=params.get("to_version"),
                                  override_reason=params.get("override_reason") or None)
        return Response(LabelSerializer(label).data)

    @extend_schema(request=NoteSerializer)
    @action(detail=True, methods=["post"])
    def archive(self, request: Request, **kwargs: Any) -> Response:
        return self._set_archived(request, True)

    @extend_schema(request=NoteSerializer)
    @action(detail=True, methods=["post"])
    def unarchive(self, request: Request, **kwargs: Any) -> Response:
        return self._set_archived(request, False)

    def _set_archived(self, request: Request, archived: bool) -> Response:
        entry = self.get_object()
        params = _valid(NoteSerializer, request)
        entry = services.set_archived(entry, archived=archived, acting_user=request.user, note=params["note"])
        return Response(self.serializer_class(entry, context=self.get_serializer_context()).data)

    # ---------------------------------------------------------------------------- rollouts
    @extend_schema(responses=rollout_api.RolloutSerializer(many=True))
    @action(detail=True, methods=["get"])
    def rollouts(self, request: Request, **kwargs: Any) -> Response:
        return Response(rollout_api.RolloutSerializer(rollout_api.for_entry(self.get_object()), many=True).data)

    @extend_schema(methods=["GET"], responses=rollout_api.RolloutSerializer)
    @extend_schema(methods=["PUT"], request=rollout_api.RolloutRequestSerializer,
                   responses={200: rollout_api.RolloutSerializer, 204: None})
    @action(detail=True, methods=["get", "put"], url_path=r"rollouts/(?P<label>[a-z0-9][a-z0-9_-]{0,39})")
    def rollout(self, request: Request, label: str, **kwargs: Any) -> Response:
        entry = self.get_object()
        if request.method == "GET":
            return rollout_api.get(entry, label)
        return rollout_api.put(entry, label, request)


class UseSerializer(serializers.Serializer):
    kind = StrictCharField(help_text="prompt, resource, template or snippet.")
    key = StrictCharField(help_text="The using entry's name, URI or URI template.")
    entry_id = serializers.IntegerField()
    version = serializers.IntegerField(help_text="The using version's number.")
    pinned = serializers.IntegerField(allow_null=True, help_text="The pinned snippet version; null: follows the "
                                                                 "label the using entry is served from.")
    labels = serializers.ListField(child=StrictCharField(), help_text="The labels serving that version now.")


def _used_by_action(used_kind: str):
    @extend_schema(responses=UseSerializer(many=True))
    @action(detail=True, methods=["get"], url_path="used-by")
    def used_by(self, request: Request, **kwargs: Any) -> Response:
        entry = self.get_object()
        return Response(UseSerializer(uses.used_by(used_kind, entry.key), many=True).data)

    used_by.__doc__ = (f"Which published versions of which entries use this {used_kind}, and the labels serving "
                       "them now.")
    return used_by


def stored_key(key_field: str, value: str) -> str:
    """URIs and URI templates are stored normalised (registry.formats.uris): look them up the same way."""
    if key_field == "uri":
        return lookup_uri(value)
    if key_field == "uri_template":
        return normalize_uri_template(value)
    return value


def if_match_revision(request: Request) -> int | None:
    """The draft revision an `If-Match` header names (None when absent or `*`); 400 when unreadable."""
    header = (request.headers.get("If-Match") or "").strip()
    if not header or header == "*":
        return None
    tag = header.split(",", 1)[0].strip().removeprefix("W/").strip().strip('"')
    if not tag.isdigit():
        raise serializers.ValidationError(
            {"If-Match": [f"Send the ETag of your last read, e.g. If-Match: \"3\" (got {header[:40]!r})."]})
    return int(tag)


def _valid(serializer_class: type[serializers.Serializer], request: Request) -> dict[str, Any]:
    serializer = serializer_class(data=request.data)
    serializer.is_valid(raise_exception=True)
    return dict(serializer.validated_data)


def _with_key_filter(key_field: str, help_text: str) -> type[EntryFilterSerializer]:
    return type(f"{key_field.title().replace('_', '')}EntryFilterSerializer", (EntryFilterSerializer,), {
        key_field: StrictCharField(required=False, help_text=help_text)})


def _lookup_action(key_field: str, serializer_class: type[serializers.Serializer]):
    LookupSerializer = type(f"{key_field.title().replace('_', '')}LookupSerializer", (serializers.Serializer,), {
        key_field: StrictCharField(max_length=2048, error_messages={"required": f"Give ?{key_field}=..."})})

    @extend_schema(parameters=[OpenApiParameter(key_field, str, required=True, description=f"Exact {key_field}.")],
                   responses=serializer_class)
    @action(detail=False, methods=["get"])
    def lookup(self, request: Request) -> Response:
        params = LookupSerializer(data=request.query_params)  # also refuses NUL characters
        params.is_valid(raise_exception=True)
        value = stored_key(key_field, params.validated_data[key_field])
        entry = get_object_or_404(self.get_queryset(), **{key_field: value})
        self.check_object_permissions(request, entry)
        return Response(serializer_class(entry, context=self.get_serializer_context()).data)

    lookup.__doc__ = f"Retrieve the draft and state of an entry by its {key_field}."
    return lookup


NAME_FILTER = _with_key_filter("name", "Exact prompt name.")
URI_FILTER = _with_key_filter("uri", "Exact resource URI.")
URI_TEMPLATE_FILTER = _with_key_filter("uri_template", "Exact URI template.")


@extend_schema_view(list=extend_schema(parameters=[NAME_FILTER]))
class PromptViewSet(EntryViewSet):
    """Prompts: drafts (create/update), versions, labels, publish, move label, roll back, archive."""

    kind = "prompt"
    queryset = Prompt.objects.all()
    serializer_class = PromptSerializer
    lookup_field = "name"
    lookup_value_regex = r"[A-Za-z0-9_.\-]+"
    search_fields = ("name", "title", "description")
    filter_serializer = NAME_FILTER


@extend_schema_view(list=extend_schema(parameters=[URI_FILTER]))
class ResourceViewSet(EntryViewSet):
    """Resources, by id in the path; find one by URI with /resources/lookup/?uri=..."""

    kind = "resource"
    queryset = Resource.objects.all()
    serializer_class = ResourceSerializer
    lookup_value_regex = r"[0-9]+"
    search_fields = ("uri", "name", "title", "description")
    filter_serializer = URI_FILTER
    lookup = _lookup_action("uri", ResourceSerializer)
    used_by = _used_by_action("resource")


@extend_schema_view(list=extend_schema(parameters=[URI_TEMPLATE_FILTER]))
class TemplateViewSet(EntryViewSet):
    """Resource templates, by id in the path; find one with /templates/lookup/?uri_template=..."""

    kind = "template"
    queryset = ResourceTemplate.objects.all()
    serializer_class = TemplateSerializer
    lookup_value_regex = r"[0-9]+"
    search_fields = ("uri_template", "name", "title", "description")
    filter_serializer = URI_TEMPLATE_FILTER
    lookup = _lookup_action("uri_template", TemplateSerializer)


@extend_schema_view(list=extend_schema(parameters=[NAME_FILTER]))
class SnippetViewSet(EntryViewSet):
    """Snippets (shared text included with {{> name }}): drafts, versions, labels, publish, move label, roll back,
    archive, and who uses them. No percentage rollouts."""

    kind = "snippet"
    queryset = Snippet.objects.all()
    serializer_class = SnippetSerializer
    lookup_field = "name"
    lookup_value_regex = r"[A-Za-z0-9_.\-]+"
    search_fields = ("name", "description")
    filter_serializer = NAME_FILTER
    used_by = _used_by_action("snippet")
