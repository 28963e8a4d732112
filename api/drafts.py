"""Draft (working copy) serializers: the same checks as the admin forms, the same writer as import.

Payloads use the vocabulary of `registry.authoring.drafts.draft_data` (bytes as base64). Field shapes are
checked by DRF and the models' own validators; then `registry.authoring.validation` runs on the would-be
draft, and its problems land next to the field they concern (per message in DRF's nested-list
format, {"messages": {"<0-based index>": {"text": [...]}}}). Like the admin, a draft with errors
is not saved; warnings come back in `warnings`. Writes go through `registry.authoring.drafts.save_draft`, the
importer's writer, which audits the field-level diff (tags included) in the same transaction.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from api.fields import Base64BytesField, StrictCharField
from registry.authoring.drafts import draft_data, normalise_tags, save_draft
from registry.authoring.validation import (
    DraftReport,
    Problem,
    validate_prompt,
    validate_resource,
    validate_snippet,
    validate_template,
)
from registry.formats import argtypes
from registry.formats.folders import folder_problem, normalise_folder
from registry.formats.uris import normalize_uri
from registry.kinds import KINDS, kind_of
from registry.models import (
    ArgumentType,
    ContentKind,
    MessageRole,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    Snippet,
    SnippetArgument,
    TemplateVariable,
    VersionedEntry,
)
from registry.models.base import label_name_validator
from registry.models.prompts import argument_name_validator, prompt_name_validator
from registry.models.resources import Audience, uri_field_validator, uri_template_field_validator
from registry.release import services


class TextAsGiven(StrictCharField):
    """A draft's text as given: not trimmed (DRF trims by default). The registry stores what was
    typed, with LF line breaks, on every path (registry.admin.forms.fields.NewlinesMixin), so a GET sent back
    as a PUT, or an imported entry saved through the API, changes nothing."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        super().__init__(**kwargs)


AUDIENCE_CHOICES = ["user", "assistant"]
MAX_LENGTH_BOUND = 2**31 - 1  # what the database column holds


def _labels(entry: VersionedEntry) -> dict[str, int]:
    return {label.name: label.version.number for label in entry.labels.select_related("version")}


# ------------------------------------------------------------------------------------------ common
class EntryMetaMixin(serializers.Serializer):
    id = serializers.IntegerField(read_only=True)
    kind = StrictCharField(read_only=True)
    archived_at = serializers.DateTimeField(read_only=True, allow_null=True)
    created_at = serializers.DateTimeField(read_only=True)
    updated_at = serializers.DateTimeField(read_only=True)
    labels = serializers.DictField(child=serializers.IntegerField(), read_only=True,
                                   help_text="Label name -> version number it serves.")
    latest_version = serializers.IntegerField(read_only=True, allow_null=True)
    tags = serializers.ListField(child=StrictCharField(max_length=100), required=False,
                                 help_text="Tags (lower-cased, sorted).")
    folder = StrictCharField(
        required=False, allow_blank=True, allow_null=True,
        help_text="Where editors find the entry, e.g. 'support/billing' (lower-cased); \"\" is the top level. "
                  "Organisational only: clients are not served it, so a change needs no version or review "
                  "(it is audited as folder_moved).")
    note = StrictCharField(write_only=True, required=False, allow_blank=True,
                                 help_text="Optional note for the audit log.")
    warnings = serializers.ListField(child=StrictCharField(), read_only=True,
                                     help_text="Warnings of this write's checks (they do not block saving; "
                                     "empty on reads).")

    model: type[VersionedEntry]
    key_field: str

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.write_warnings: list[str] = []  # the `warnings` field's value (that name is the field's)

    def to_representation(self, instance: VersionedEntry) -> dict[str, Any]:
        data = draft_data(instance)
        latest = services.latest_version(instance)
        data.update(id=instance.pk, kind=instance.kind, archived_at=instance.archived_at,
                    created_at=instance.created_at, updated_at=instance.updated_at, labels=_labels(instance),
                    latest_version=latest.number if latest else None)
        if "audience" in data:
            data["audience"] = [a for a in (data["audience"] or "").split(",") if a]
        data["warnings"] = list(getattr(self, "write_warnings", []))
        return super().to_representation(data)

    def validate_tags(self, value: list[str]) -> list[str]:
        tags = normalise_tags(value)
        if len(", ".join(tags)) > 500:
            raise serializers.ValidationError("Too many or too long tags: at most 500 characters together.",
                                              code="max_length")
        return tags

    def validate_folder(self, value: str | None) -> str:
        problem = folder_problem(value)
        if problem:
            raise serializers.ValidationError(problem, code="invalid_folder")
        return normalise_folder(value)

    def validate_key(self, value: str) -> str:
        entry = self.instance
        others = self.model.objects.filter(**{self.key_field: value})
        if entry is not None:
            others = others.exclude(pk=entry.pk)
            if getattr(entry, self.key_field) != value and entry.versions.exists():
                raise serializers.ValidationError(
                    f"The {self.key_field} cannot change once published (clients use it).", code="immutable")
        if others.exists():
            raise serializers.ValidationError(f"Another {self.model.kind} already has this {self.key_field}.",
                                              code="unique")
        return value

    def draft_payload(self, attrs: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in attrs.items() if k != "note"}

    def merged(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """The draft as it would be after this request (PATCH keeps what is not given)."""
        base = draft_data(self.instance) if self.instance is not None and self.partial else {}
        return {**base, **self.draft_payload(attrs)}

    def raise_report(self, report: DraftReport, route: Any) -> None:
        errors: dict[str, Any] = {}
        for problem in report.errors:
            route(problem, errors)
        if errors:
            raise serializers.ValidationError(errors)
        self.write_warnings = list(report.warnings)

    def create(self, validated_data: dict[str, Any]) -> VersionedEntry:
        note = validated_data.pop("note", "")
        entry = self.model()
        save_draft(entry, self.full_data(validated_data), acting_user=self.context["request"].user, note=note)
        return entry

    def update(self, instance: VersionedEntry, validated_data: dict[str, Any]) -> VersionedEntry:
        note = validated_data.pop("note", "")
        data = validated_data if self.partial else self.full_data(validated_data)
        save_draft(instance, data, acting_user=self.context["request"].user, note=note)
        return instance

    def full_data(self, validated: dict[str, Any]) -> dict[str, Any]:
        """PUT/POST are declarative like the import: a key left out means empty."""
        empty: dict[str, Any] = {name: ([] if name in ("tags", "arguments", "messages", "variables") else None)
                 for name, field in self.fields.items() if not field.read_only and name != "note"}
        return {**empty, **validated}


def _add(errors: dict[str, Any], field: str, message: str) -> None:
    errors.setdefault(field, []).append(message)


# ------------------------------------------------------------------------------------------ prompts
class ArgumentSerializer(serializers.Serializer):
    name = TextAsGiven(max_length=64, validators=[argument_name_validator])
    title = TextAsGiven(max_length=200, required=False, allow_blank=True, default="")
    description = TextAsGiven(required=False, allow_blank=True, default="")
    required = serializers.BooleanField(required=False, default=True)  # type: ignore[assignment]  # not Field.required
    default = TextAsGiven(required=False, allow_blank=True, default="")
    suggestions = serializers.ListField(child=StrictCharField(), required=False, default=list)
    type = serializers.ChoiceField(choices=ArgumentType.choices, required=False, default=ArgumentType.TEXT,
                                   help_text="What values prompts/get accepts (MCP sends them all as strings).")
    choices = serializers.ListField(child=StrictCharField(), required=False, default=list,
                                    help_text="enum: the allowed values.")
    min_length = serializers.IntegerField(min_value=0, max_value=MAX_LENGTH_BOUND, required=False, allow_null=True,
                                          default=None, help_text="text/string: fewest characters.")
    max_length = serializers.IntegerField(min_value=0, max_value=MAX_LENGTH_BOUND, required=False, allow_null=True,
                                          default=None, help_text="text/string: most characters.")
    pattern = TextAsGiven(max_length=500, required=False, allow_blank=True, default="",
                                    help_text="text/string: RE2 regular expression the whole value must match.")
    minimum = serializers.FloatField(required=False, allow_null=True, default=None,
                                     help_text="integer/number: smallest value allowed.")
    maximum = serializers.FloatField(required=False, allow_null=True, default=None,
                                     help_text="integer/number: largest value allowed.")


    def to_internal_value(self, data: Any) -> Any:
        # `"default": 5` for an integer argument, `true` for a boolean one: read as prompts as code read it.
        if isinstance(data, dict):
            typed = argtypes.typed_default_text(str(data.get("type") or ArgumentType.TEXT), data.get("default"))
            if typed is not None:
                data = {**data, "default": typed}
        return super().to_internal_value(data)

    def validate_choices(self, value: list[str]) -> list[str]:
        return _one_line_values(value, "choice")

    def validate_suggestions(self, value: list[str]) -> list[str]:
        return _one_line_values(value, "suggestion")


def _one_line_values(values: list[str], what: str) -> list[str]:
    """Choices and suggestions are stored one per line: a value spanning lines would be split."""
    for value in values:
        if "\n" in value or "\r" in value:
            raise serializers.ValidationError(f"A {what} must be a single line: {value!r}.", code="multi_line")
    return values


class MessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=MessageRole.choices, default=MessageRole.USER)
    kind = serializers.ChoiceField(choices=ContentKind.choices, default=ContentKind.TEXT)
    text = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    uri = TextAsGiven(max_length=2048, required=False, allow_blank=True)
    resource_uri = TextAsGiven(max_length=2048, required=False, allow_blank=True,
                                         help_text="Embed or link this registry resource (resource, resource_link).")
    mime_type = TextAsGiven(max_length=100, required=False, allow_blank=True)
    data = Base64BytesField(  # type: ignore[assignment]  # a declared field, not Serializer.data
        help_text="image/audio/binary embedded resource bytes, base64.")
    link_name = TextAsGiven(max_length=200, required=False, allow_blank=True)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        uri = attrs.get("resource_uri")
        if uri:
            if attrs.get("kind") not in (ContentKind.RESOURCE, ContentKind.RESOURCE_LINK):
                raise serializers.ValidationError(
                    {"resource_uri": "Only resource and resource_link messages can name a registry resource."})
            if not Resource.objects.filter(uri=normalize_uri(uri)).exists():
                raise serializers.ValidationError({"resource_uri": f"No registry resource has the URI {uri}."})
        if attrs.get("kind") == ContentKind.TEXT:
            attrs["data"] = None
        return attrs


def _message_field(kind: str, code: str) -> str:
    """The message field a per-message problem (by its registry.authoring.validation code) belongs to."""
    if code == "file_type":
        return "mime_type"
    if code in ("file_missing", "file_too_large"):
        return "data"
    return "text" if kind == ContentKind.TEXT else "uri"


class PromptSerializer(EntryMetaMixin):
    name = TextAsGiven(max_length=128, validators=[prompt_name_validator],
                                 help_text="The MCP prompt name; cannot change once published.")
    title = TextAsGiven(max_length=200, required=False, allow_blank=True)
    description = TextAsGiven(required=False, allow_blank=True)
    arguments = ArgumentSerializer(many=True, required=False)
    messages = MessageSerializer(many=True, required=False)

    model = Prompt
    key_field = "name"

    def validate_name(self, value: str) -> str:
        return self.validate_key(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.merged(attrs) if self.partial else self.full_data(attrs)
        prompt = Prompt(name=data.get("name") or "", description=data.get("description") or "")
        arguments = [
            PromptArgument(name=a["name"], required=a.get("required", True), default=a.get("default") or "",
                           suggestions="\n".join(a.get("suggestions") or ()), type=a.get("type") or "text",
                           choices="\n".join(a.get("choices") or ()), min_length=a.get("min_length"),
                           max_length=a.get("max_length"), pattern=a.get("pattern") or "",
                           minimum=a.get("minimum"), maximum=a.get("maximum"))
            for a in data.get("arguments") or []
        ]
        uris = {m["resource_uri"] for m in data.get("messages") or [] if m.get("resource_uri")}
        stored = {r.uri: r for r in Resource.objects.filter(uri__in={normalize_uri(u) for u in uris})} if uris else {}
        resources = {uri: stored[normalize_uri(uri)] for uri in uris if normalize_uri(uri) in stored}
        messages = [
            PromptMessage(kind=m.get("kind") or "text", text=m.get("text") or "", uri=m.get("uri") or "",
                          resource=resources.get(m.get("resource_uri") or ""), mime_type=m.get("mime_type") or "",
                          data=m.get("data"))  # type: ignore[misc]  # `data` is a property Model() sets
            for m in data.get("messages") or []
        ]
        count = len(messages)

        # Routed by each Problem's code and place (registry.authoring.validation), never by its words.
        def route(problem: Problem, errors: dict[str, Any]) -> None:
            if problem.where.startswith("message:"):
                index = int(problem.where.partition(":")[2]) - 1
                per_message = errors.setdefault("messages", {})  # DRF's nested-list format: {index: {field: [...]}}
                if isinstance(per_message, dict) and 0 <= index < count:
                    _add(per_message.setdefault(str(index), {}), _message_field(messages[index].kind, problem.code),
                         problem.detail)
                    return
            if problem.code in ("duplicate_argument", "argument"):
                _add(errors, "arguments", problem)
            elif problem.code == "no_messages":
                _add(errors, "messages", problem)
            else:
                _add(errors, "non_field_errors", problem)

        self.raise_report(validate_prompt(prompt, arguments=arguments, messages=messages), route)
        return attrs


# ------------------------------------------------------------------------------------------ resources
class DescriptionFields(serializers.Serializer):
    name = TextAsGiven(max_length=200, help_text="Short programmatic name.")
    title = TextAsGiven(max_length=200, required=False, allow_blank=True)
    description = TextAsGiven(required=False, allow_blank=True)
    mime_type = TextAsGiven(max_length=100, required=False, allow_blank=True)
    audience = serializers.ListField(child=serializers.ChoiceField(choices=AUDIENCE_CHOICES), required=False,
                                     help_text="Annotation: who the content is for.")
    priority = serializers.FloatField(required=False, allow_null=True, min_value=0.0, max_value=1.0)


class ResourceSerializer(EntryMetaMixin, DescriptionFields):
    uri = TextAsGiven(max_length=2048, validators=[uri_field_validator],
                                help_text="The URI clients read; cannot change once published.")
    text = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    data = Base64BytesField(  # type: ignore[assignment]  # a declared field, not Serializer.data
        help_text="Binary content as base64 (instead of text).")

    model = Resource
    key_field = "uri"

    def validate_uri(self, value: str) -> str:
        return self.validate_key(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.merged(attrs) if self.partial else self.full_data(attrs)
        resource = Resource(uri=data.get("uri") or "", name=data.get("name") or "", text=data.get("text") or "",
                            data=data.get("data"))  # type: ignore[misc]  # `data` is a property Model() sets

        def route(problem: Problem, errors: dict[str, Any]) -> None:
            if problem.code == "invalid_uri":
                _add(errors, "uri", problem)
            elif problem.code in ("snippet_reference", "snippet_argument"):
                _add(errors, "text", problem)
            elif problem.where == "content":
                _add(errors, "data", problem)
            elif problem.code == "no_name":
                _add(errors, "name", problem)
            else:
                _add(errors, "non_field_errors", problem)

        self.raise_report(validate_resource(resource), route)
        return attrs


class VariableSerializer(serializers.Serializer):
    name = TextAsGiven(max_length=64)
    description = TextAsGiven(required=False, allow_blank=True, default="")
    suggestions = serializers.ListField(child=StrictCharField(), required=False, default=list)


class TemplateSerializer(EntryMetaMixin, DescriptionFields):
    uri_template = TextAsGiven(max_length=2048, validators=[uri_template_field_validator],
                                         help_text="RFC 6570 URI template; cannot change once published.")
    body = StrictCharField(required=False, allow_blank=True, trim_whitespace=False)
    variables = VariableSerializer(many=True, required=False)

    model = ResourceTemplate
    key_field = "uri_template"

    def validate_uri_template(self, value: str) -> str:
        return self.validate_key(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.merged(attrs) if self.partial else self.full_data(attrs)
        template = ResourceTemplate(uri_template=data.get("uri_template") or "", name=data.get("name") or "",
                                    body=data.get("body") or "")
        variables = [TemplateVariable(name=v["name"]) for v in data.get("variables") or []]

        def route(problem: Problem, errors: dict[str, Any]) -> None:
            if problem.code == "invalid_uri":
                _add(errors, "uri_template", problem)
            elif problem.code == "unknown_variable":
                _add(errors, "variables", problem)
            elif problem.code == "no_name":
                _add(errors, "name", problem)
            else:
                _add(errors, "body", problem)

        self.raise_report(validate_template(template, variables=variables), route)
        return attrs


# ------------------------------------------------------------------------------------------ snippets
class SnippetArgumentSerializer(serializers.Serializer):
    name = TextAsGiven(max_length=64, validators=[argument_name_validator])
    description = TextAsGiven(required=False, allow_blank=True, default="")
    type = serializers.ChoiceField(choices=ArgumentType.choices, required=False, default=ArgumentType.TEXT,
                                   help_text="The type the including prompt's argument of this name must have.")


class SnippetSerializer(EntryMetaMixin):
    name = TextAsGiven(max_length=128, validators=[prompt_name_validator],
                       help_text="The name texts include it by ({{> name }}); cannot change once published.")
    description = TextAsGiven(required=False, allow_blank=True)
    text = StrictCharField(required=False, allow_blank=True, trim_whitespace=False,
                                 help_text="The shared text: {{ argument }} placeholders, {{> other }} references.")
    arguments = SnippetArgumentSerializer(many=True, required=False)

    model = Snippet
    key_field = "name"

    def validate_name(self, value: str) -> str:
        return self.validate_key(value)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        data = self.merged(attrs) if self.partial else self.full_data(attrs)
        snippet = Snippet(name=data.get("name") or "", text=data.get("text") or "")
        arguments = [SnippetArgument(name=a["name"], type=a.get("type") or "text")
                     for a in data.get("arguments") or []]

        def route(problem: Problem, errors: dict[str, Any]) -> None:
            if problem.code == "duplicate_argument":
                _add(errors, "arguments", problem)
            else:
                _add(errors, "text" if problem.where == "text" else "non_field_errors", problem)

        self.raise_report(validate_snippet(snippet, arguments=arguments), route)
        return attrs


SERIALIZERS = {"prompt": PromptSerializer, "resource": ResourceSerializer, "template": TemplateSerializer,
               "snippet": SnippetSerializer}
__all__ = ["KINDS", "SERIALIZERS", "Audience", "kind_of", "label_name_validator", "save_draft"]
