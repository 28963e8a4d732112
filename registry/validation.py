"""Checks a draft must pass before it can be published, worded for non-programmers.

The admin forms show these next to the field; the services re-check them so no path
(import, API, crafted POST) can publish a broken draft.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from registry.argtypes import spec_problems
from registry.errors import InvalidUri, TemplateSyntaxError
from registry.models import Prompt, Resource, ResourceTemplate, VersionedEntry
from registry.rendering import placeholders_in
from registry.snapshots import snapshot_argument
from registry.uris import template_variable_names, validate_uri


@dataclass
class DraftReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def max_upload_bytes() -> int:
    return int(settings.REGISTRY.get("MAX_UPLOAD_BYTES", 5 * 1024 * 1024))


def max_document_bytes() -> int:
    """Largest prompts-as-code YAML file read (command line and API): parsing holds it all in memory."""
    return int(settings.REGISTRY.get("MAX_IMPORT_BYTES", 20 * 1024 * 1024))


def check_size(size: int, where: str, report: DraftReport, what: str = "file") -> None:
    limit = max_upload_bytes()
    if size > limit:
        report.errors.append(f"{where}: the {what} is {size:,} bytes; the limit is {limit:,} bytes.")


def template_placeholders(text: str, where: str, report: DraftReport) -> list[str]:
    try:
        return placeholders_in(text)
    except TemplateSyntaxError as exc:
        report.errors.append(f"{where}: {exc.message}")
        return []


def registry_resource_exists(uri: str) -> bool:
    """Whether a resource argument's default or suggestion names a resource of the registry."""
    return Resource.objects.filter(uri=uri, archived_at__isnull=True).exists()


def validate_prompt(prompt: Prompt, arguments: list[Any] | None = None, messages: list[Any] | None = None) -> DraftReport:
    """Check a prompt draft; `arguments`/`messages` may be unsaved rows from a form."""
    report = DraftReport()
    arguments = list(prompt.arguments.all()) if arguments is None else arguments
    messages = list(prompt.messages.all()) if messages is None else messages
    if not prompt.description.strip():
        report.warnings.append("The prompt has no description; clients show it in their prompt lists.")
    declared: dict[str, int] = {}
    for arg in arguments:
        declared[arg.name] = declared.get(arg.name, 0) + 1
    for name, count in declared.items():
        if count > 1:
            report.errors.append(f"The argument name '{name}' is used {count} times; names must be unique.")
    for arg in arguments:
        for problem in spec_problems(snapshot_argument(arg), registry_resource_exists):
            report.errors.append(f"Argument '{arg.name}': {problem}")
    if not messages:
        report.errors.append("A prompt needs at least one message.")
    used: set[str] = set()
    for index, message in enumerate(messages, start=1):
        where = f"Message {index}"
        if message.kind == "text":
            if not message.text.strip():
                report.errors.append(f"{where}: the text is empty.")
            used.update(template_placeholders(message.text, where, report))
        elif message.kind in ("image", "audio"):
            if not message.data_sha256:
                report.errors.append(f"{where}: upload the {message.kind} file.")
            if not (message.mime_type or "").startswith(message.kind + "/"):
                report.errors.append(f"{where}: the file type must be {message.kind}/..., e.g. "
                                     f"{'image/png' if message.kind == 'image' else 'audio/mpeg'}.")
            check_size(message.data_size, where, report)
        else:  # resource, resource_link
            if message.resource_id is None:
                if not message.uri:
                    report.errors.append(f"{where}: give a URI or choose a registry resource.")
                else:
                    names = template_placeholders(message.uri, f"{where} URI", report)
                    used.update(names)
                    literal = message.uri
                    for name in names:
                        literal = literal.replace("{{ " + name + " }}", "x").replace("{{" + name + "}}", "x")
                    if not names:
                        try:
                            validate_uri(literal)
                        except InvalidUri as exc:
                            report.errors.append(f"{where}: {exc.message}")
                if message.kind == "resource":
                    check_size(message.data_size, where, report)
                    check_size(len(message.text.encode("utf-8")), where, report, "text")
    for name in sorted(used - set(declared)):
        report.errors.append(f"The placeholder {{{{ {name} }}}} is not a declared argument; add it or fix the spelling.")
    for name in sorted(set(declared) - used):
        report.warnings.append(f"The argument '{name}' is declared but never used in a message.")
    return report


def validate_resource(resource: Resource) -> DraftReport:
    report = DraftReport()
    try:
        validate_uri(resource.uri)
    except InvalidUri as exc:
        report.errors.append(exc.message)
    if resource.data_sha256 and resource.text:
        report.errors.append("Give either text or an uploaded file, not both.")
    check_size(resource.data_size, "Content", report)
    check_size(len(resource.text.encode("utf-8")), "Content", report, "text")
    if not resource.name.strip():
        report.errors.append("The resource needs a name.")
    return report


def validate_template(template: ResourceTemplate, variables: list[Any] | None = None) -> DraftReport:
    report = DraftReport()
    try:
        names = set(template_variable_names(template.uri_template))
    except InvalidUri as exc:
        report.errors.append(exc.message)
        names = set()
    used = set(template_placeholders(template.body, "Body", report))
    for name in sorted(used - names):
        report.errors.append(f"The placeholder {{{{ {name} }}}} is not a variable of the URI template.")
    variables = list(template.variables.all()) if variables is None else variables
    for variable in variables:
        if names and variable.name not in names:
            report.errors.append(f"Suggestions are given for '{variable.name}', which the URI template does not have.")
    if not template.name.strip():
        report.errors.append("The template needs a name.")
    return report


def validate_entry(entry: VersionedEntry) -> DraftReport:
    if isinstance(entry, Prompt):
        return validate_prompt(entry)
    if isinstance(entry, Resource):
        return validate_resource(entry)
    if isinstance(entry, ResourceTemplate):
        return validate_template(entry)
    raise TypeError(f"not a registry entry: {entry!r}")
