"""Published versions, release labels and the publish / move / rollback / archive requests."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from api.fields import StrictCharField
from registry.models import PRODUCTION
from registry.models.base import label_name_validator


class VersionSummarySerializer(serializers.Serializer):
    number = serializers.IntegerField()
    content_hash = StrictCharField()
    change_note = StrictCharField()
    author_name = StrictCharField()
    created_at = serializers.DateTimeField()
    labels = serializers.SerializerMethodField(help_text="Labels serving this version now.")

    def get_labels(self, version: Any) -> list[str]:
        return sorted(label.name for label in version.labels.all())


class VersionSerializer(VersionSummarySerializer):
    snapshot = serializers.JSONField(help_text="Exactly what clients receive from this version (MCP shape).")


class PublishedVersionSerializer(VersionSerializer):
    review_requests = serializers.ListField(
        child=serializers.IntegerField(), required=False,
        help_text="With request_review: the review requests filed for the protected labels not moved.")


class RolloutStateSerializer(serializers.Serializer):
    candidate_version = serializers.IntegerField()
    percent = serializers.IntegerField()


class LabelSerializer(serializers.Serializer):
    name = StrictCharField()
    version = serializers.IntegerField(source="version.number")
    protected = serializers.BooleanField()
    moved_at = serializers.DateTimeField()
    moved_by = StrictCharField()


class OverrideMixin(serializers.Serializer):
    override_reason = StrictCharField(
        required=False, allow_blank=True,
        help_text="Emergency override of a protected label (needs registry.override_protected_labels); audited.",
    )


class PublishRequestSerializer(OverrideMixin):
    note = StrictCharField(help_text="Required: what changed and why.",
                                 error_messages={"required": "A change note is required to publish: say what "
                                                 "changed and why.", "blank": "A change note is required to "
                                                 "publish: say what changed and why."})
    labels = serializers.ListField(
        child=StrictCharField(max_length=40, validators=[label_name_validator]), default=[PRODUCTION],
        help_text="Labels to point at the new version (default [production]; [] publishes without moving any).",
    )
    request_review = serializers.BooleanField(
        default=False, help_text="For each protected label you may not move (no override reason), file a review "
        "request for the new version instead of refusing the publish (409 approval_required); the response lists "
        "them in `review_requests`.")


class MoveLabelRequestSerializer(OverrideMixin):
    label = StrictCharField(  # type: ignore[assignment]  # a declared field, not Field.label
        max_length=40, validators=[label_name_validator])
    version = serializers.IntegerField(min_value=1)
    note = StrictCharField(required=False, allow_blank=True, default="")


class RollbackRequestSerializer(OverrideMixin):
    label = StrictCharField(  # type: ignore[assignment]  # a declared field, not Field.label
        max_length=40, validators=[label_name_validator], default=PRODUCTION)
    to_version = serializers.IntegerField(min_value=1, required=False, allow_null=True,
                                          help_text="Default: the version before the one the label serves.")
    note = StrictCharField(error_messages={"required": "Say why you roll back: a note is required.",
                                                 "blank": "Say why you roll back: a note is required."})


class NoteSerializer(serializers.Serializer):
    note = StrictCharField(required=False, allow_blank=True, default="")
