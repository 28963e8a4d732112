"""Percentage rollouts per entry and label: read the running one, set or change it.

Writes go through `registry.release.rollouts.set_rollout`, which checks publish rights and, on a
protected label, that an approval (or audited override) stands behind the candidate.
"""

from __future__ import annotations

from typing import Any

from django.http import Http404
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from api.fields import StrictCharField
from registry.models import Rollout, VersionedEntry
from registry.release.rollouts import rollout_state, state_of


class RolloutSerializer(serializers.Serializer):
    label = StrictCharField()  # type: ignore[assignment]  # a declared field, not Field.label
    candidate_version = serializers.IntegerField()
    percent = serializers.IntegerField()
    label_version = serializers.SerializerMethodField(help_text="What the rest of the label's clients get.")
    authority = StrictCharField()
    note = StrictCharField()
    started_at = serializers.DateTimeField()
    updated_at = serializers.DateTimeField()
    updated_by_name = StrictCharField()
    etag = serializers.SerializerMethodField(help_text="This state's entity tag: send it as If-Match to change it.")

    def get_label_version(self, rollout: Rollout) -> int | None:
        from registry.kinds import KINDS

        label = (KINDS[rollout.entry_kind].label_model.objects
                 .filter(entry_id=rollout.entry_id, name=rollout.label).select_related("version").first())
        return label.version.number if label else None

    def get_etag(self, rollout: Rollout) -> str:
        return rollout_state(rollout, self.get_label_version(rollout))


class RolloutRequestSerializer(serializers.Serializer):
    version = serializers.IntegerField(min_value=1, help_text="The candidate version.")
    percent = serializers.IntegerField(min_value=0, max_value=100,
                                       help_text="Share of the label's clients; 100 completes, 0 aborts.")
    note = StrictCharField(required=False, allow_blank=True, default="")
    override_reason = StrictCharField(
        required=False, allow_blank=True,
        help_text="Start a rollout on a protected label without an approved review (emergency override, audited).",
    )


def for_entry(entry: VersionedEntry):
    return Rollout.objects.filter(entry_kind=entry.kind, entry_id=entry.pk).order_by("label")


def get_for_label(entry: VersionedEntry, label: str) -> Rollout:
    rollout = for_entry(entry).filter(label=label).first()
    if rollout is None:
        raise Http404(f"No percentage rollout runs on '{label}' of {entry.key}.")
    return rollout


def etag_header(state: str) -> dict[str, str]:
    return {"ETag": f'"{state}"'}


def get(entry: VersionedEntry, label: str) -> Response:
    data = RolloutSerializer(get_for_label(entry, label)).data
    return Response(data, headers=etag_header(data["etag"]))


def _entity_tag(request: Request, header: str) -> str | None:
    """The tag an If-Match / If-None-Match header names ("*" kept), None when absent."""
    value = (request.headers.get(header) or "").strip()
    if not value:
        return None
    tag = value.split(",", 1)[0].strip().removeprefix("W/").strip().strip('"')
    if not tag:
        raise serializers.ValidationError({header: [f"Send the ETag of your last read (got {value[:60]!r})."]})
    return tag


def put(entry: VersionedEntry, label: str, request: Request) -> Response:
    from registry.release.rollouts import set_rollout

    serializer = RolloutRequestSerializer(data=request.data)
    serializer.is_valid(raise_exception=True)
    params: dict[str, Any] = serializer.validated_data
    none_match = _entity_tag(request, "If-None-Match")
    if none_match not in (None, "*"):
        raise serializers.ValidationError({"If-None-Match": ["Only If-None-Match: * (start only if none runs) "
                                                             "is understood."]})
    rollout = set_rollout(entry, label=label, version_number=params["version"], percent=params["percent"],
                          acting_user=request.user, note=params["note"],
                          override_reason=params.get("override_reason") or None,
                          if_match=_entity_tag(request, "If-Match"), if_none_match=none_match == "*",
                          replace=False)
    if rollout is None:  # 0 aborted it, 100 completed it (the label now serves the candidate)
        return Response(status=status.HTTP_204_NO_CONTENT, headers=etag_header(state_of(entry, label)))
    data = RolloutSerializer(rollout).data
    return Response(data, headers=etag_header(data["etag"]))
