"""Prompts as code over HTTP: GET the YAML export, POST a YAML file to import (dry run, publish).

Same format, same all-or-nothing import as `manage.py registry_export/registry_import`. The
posted file is written to an empty temporary folder, so `file:` side files cannot reach the
server's own files (give content inline or as base64 instead).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import yaml
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.parsers import BaseParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from api.fields import StrictCharField
from api.parsers import JSONParser
from registry.conf import max_document_bytes
from registry.portable.importer import ImportFailed, ImportReport, export_yaml, import_documents

ENTRY_MODELS = ("prompt", "resource", "resourcetemplate")


class YAMLParser(BaseParser):
    """The raw YAML text as {"document": text}; flags come from the query string."""

    media_type = "application/yaml"

    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> dict[str, Any]:
        limit = max_document_bytes()
        raw = stream.read(limit + 1) if stream is not None else b""
        if len(raw) > limit:
            raise serializers.ValidationError({"document": [f"The file is larger than {limit:,} bytes."]})
        try:
            return {"document": raw.decode("utf-8")}
        except UnicodeDecodeError as exc:
            raise serializers.ValidationError({"document": ["The file is not UTF-8 text."]}) from exc


class TextYAMLParser(YAMLParser):
    media_type = "text/yaml"


class LegacyYAMLParser(YAMLParser):
    media_type = "application/x-yaml"


def _need(request: Request, actions: tuple[str, ...]) -> None:
    perms = [f"registry.{action}_{model}" for model in ENTRY_MODELS for action in actions]
    if not request.user.has_perms(perms):
        raise PermissionDenied("This needs the rights to " + " and ".join(actions) + " prompts, resources and "
                               "templates (the Editors or Publishers group).")


class ExportParamsSerializer(serializers.Serializer):
    include_archived = serializers.BooleanField(default=False, help_text="Also export archived entries.")


class ExportView(APIView):
    """Every entry's draft as prompts-as-code YAML (what `manage.py registry_export` writes)."""

    @extend_schema(parameters=[ExportParamsSerializer],
                   responses={(200, "application/yaml"): OpenApiResponse(OpenApiTypes.STR, description="YAML")})
    def get(self, request: Request) -> HttpResponse:
        _need(request, ("view",))
        params = ExportParamsSerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        text = export_yaml(include_archived=params.validated_data["include_archived"])
        response = HttpResponse(text, content_type="application/yaml; charset=utf-8")
        response["Content-Disposition"] = 'inline; filename="registry.yaml"'
        return response


class ImportRequestSerializer(serializers.Serializer):
    document = StrictCharField(trim_whitespace=False,
                                     help_text="The YAML file's text (or send the raw file as application/yaml "
                                     "with the flags in the query string).")
    dry_run = serializers.BooleanField(default=False, help_text="Run everything, save nothing.")
    publish = serializers.BooleanField(default=False, help_text="Publish drafts that differ from their newest "
                                       "version and point their labels at it (protected labels need approval).")
    note = StrictCharField(required=False, allow_blank=True, default="", help_text="Required to publish.")
    override_reason = StrictCharField(
        required=False, allow_blank=True, default="",
        help_text="Publish protected labels without approval (needs registry.override_protected_labels; audited).")
    filename = StrictCharField(required=False, default="import.yaml", max_length=200,
                                     help_text="How error messages name the file.")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if attrs["publish"] and not attrs["note"].strip():
            raise serializers.ValidationError(
                {"note": ["A change note is required to publish: say what changed and why."]})
        return attrs


class OutcomeSerializer(serializers.Serializer):
    kind = StrictCharField()
    key = StrictCharField()
    status = serializers.ChoiceField(choices=["created", "updated", "unchanged"])
    changes = serializers.ListField(child=serializers.DictField(), help_text="[{field, before, after}]")
    published = serializers.IntegerField(allow_null=True, help_text="Version made by this import.")
    labels_moved = serializers.ListField(child=StrictCharField())
    warnings = serializers.ListField(child=StrictCharField())


class ImportReportSerializer(serializers.Serializer):
    source = StrictCharField()  # type: ignore[assignment]  # a declared field, not Field.source
    dry_run = serializers.BooleanField()
    publish = serializers.BooleanField()
    changed = serializers.BooleanField()
    summary = StrictCharField()
    outcomes = OutcomeSerializer(many=True)


class ImportErrorSerializer(serializers.Serializer):
    detail = StrictCharField()
    problems = serializers.ListField(child=StrictCharField(),
                                     help_text="Each names the file and line, the entry and the field.")


def report_data(report: ImportReport) -> dict[str, Any]:
    return ImportReportSerializer({
        "source": report.source, "dry_run": report.dry_run, "publish": report.publish, "changed": report.changed,
        "summary": report.summary(), "outcomes": report.outcomes,
    }).data


class ImportView(APIView):
    """Import a prompts-as-code YAML file: all or nothing, idempotent, optional dry run and publish."""

    parser_classes = [JSONParser, YAMLParser, TextYAMLParser, LegacyYAMLParser]

    @extend_schema(
        request={"application/json": ImportRequestSerializer,
                 "application/yaml": {"type": "string", "description": "The YAML file itself; pass dry_run, "
                                      "publish, note, override_reason and filename in the query string."}},
        responses={200: ImportReportSerializer, 400: ImportErrorSerializer},
    )
    def post(self, request: Request) -> Response:
        _need(request, ("add", "change", "view"))
        data = dict(request.data) if isinstance(request.data, dict) else {}
        for flag in ("dry_run", "publish", "note", "filename", "override_reason"):
            if flag not in data and flag in request.query_params:
                data[flag] = request.query_params[flag]
        serializer = ImportRequestSerializer(data=data)
        serializer.is_valid(raise_exception=True)
        params = serializer.validated_data
        with tempfile.TemporaryDirectory(prefix="registry-import-") as folder:
            # `filename` only names the file in messages: as a path it could be "..", hold a NUL or
            # be too long for the file system.
            path = Path(folder) / "import.yaml"
            path.write_text(params["document"], encoding="utf-8")
            try:
                report = import_documents(path, publish=params["publish"], note=params["note"],
                                          dry_run=params["dry_run"], acting_user=request.user,
                                          source=params["filename"],
                                          override_reason=params["override_reason"] or None)
            except ImportFailed as exc:
                return Response({"detail": f"{len(exc.problems)} problem(s); nothing was imported.",
                                 "problems": exc.problems}, status=status.HTTP_400_BAD_REQUEST)
            except yaml.YAMLError as exc:
                # registry.portable.format reports marked syntax errors; the YAML reader's own (control
                # characters, bad encodings) arrive here unwrapped.
                problem = f"{params['filename']}: not readable as YAML: {exc}"
                return Response({"detail": "1 problem(s); nothing was imported.", "problems": [problem]},
                                status=status.HTTP_400_BAD_REQUEST)
        return Response(report_data(report))
