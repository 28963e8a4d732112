"""Checks a draft must pass before it can be published, worded for non-programmers.

The admin forms show these next to the field; the services re-check them so no path
(import, API, crafted POST) can publish a broken draft. Each problem is a `Problem`: the text in
the reader's language, plus a `code` and `where` that say which field it is about, so the forms
place it without reading the (translated) words.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from registry.authoring.reference_checks import argument_gap, reached_by
from registry.authoring.snapshots import snapshot_argument
from registry.conf import max_upload_bytes
from registry.errors import InvalidUri, TemplateSyntaxError
from registry.formats.argtypes import spec_problems
from registry.formats.references import references_in, without_references
from registry.formats.rendering import placeholders_in
from registry.formats.uris import template_variable_names, validate_uri
from registry.models import Prompt, Resource, ResourceTemplate, Snippet, VersionedEntry


class Problem(str):
    """A problem's text (a str, so every caller keeps working) with where it belongs.

    `code` names the check; `where` is "message:N" for the Nth message, "content" for a
    resource's content, "body" for a template body, else ""; `detail` is the text without its
    "Message 2: " prefix (what a form shows next to the message's field); `name` is the
    argument or placeholder concerned, if any.
    """

    code: str
    where: str
    detail: str
    name: str

    def __new__(cls, text: str, *, code: str, where: str = "", detail: str = "", name: str = "") -> Problem:
        problem = super().__new__(cls, text)
        problem.code, problem.where, problem.detail, problem.name = code, where, detail or text, name
        return problem


def _at(where: str, label: str, detail: str, code: str) -> Problem:
    """'Message 2: the text is empty.' with the place kept apart from the words."""
    return Problem(_("%(where)s: %(problem)s") % {"where": label, "problem": detail}, code=code, where=where,
                   detail=detail[:1].upper() + detail[1:])


def _message_label(index: int) -> str:
    return _("Message %(number)s") % {"number": index}


@dataclass
class DraftReport:
    errors: list[Problem] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors


def check_size(size: int, where: str, report: DraftReport, what: str = "file", *, place: str = "") -> None:
    limit = max_upload_bytes()
    if size > limit:
        text = (_("the file is %(size)s bytes; the limit is %(limit)s bytes.") if what == "file"
                else _("the text is %(size)s bytes; the limit is %(limit)s bytes."))
        report.errors.append(_at(place, where, text % {"size": f"{size:,}", "limit": f"{limit:,}"},
                                 "file_too_large" if what == "file" else "text_too_large"))


def template_placeholders(text: str, where: str, report: DraftReport, *, place: str = "",
                          code: str = "template_syntax") -> list[str]:
    """The placeholders of `text` (its snippet references aside: registry/formats/references.py)."""
    try:
        references_in(text)
        return placeholders_in(without_references(text))
    except TemplateSyntaxError as exc:
        detail = _("Line %(line)s: %(problem)s") % {"line": exc.line, "problem": exc.detail}
        report.errors.append(_at(place, where, detail, code))
        return []


def check_references(text: str, where: str, report: DraftReport, *, place: str,
                     own: str | None = None) -> dict[str, tuple[str, str]]:
    """Report the broken snippet references of `text` (registry/authoring/reference_checks.py) at their
    line; returns the arguments the snippets it includes need: name -> (type, snippet)."""
    reached = reached_by(text, own=own)
    for line, reason in reached.problems:
        report.errors.append(_at(place, where, _("Line %(line)s: %(problem)s") % {"line": line, "problem": reason},
                                 "snippet_reference"))
    return reached.arguments


def check_snippet_arguments(needed: dict[str, tuple[str, str]], declared: dict[str, str], report: DraftReport,
                            *, where: str, place: str) -> None:
    """The arguments included snippets need must be declared by the including prompt or snippet, same type."""
    for name, (kind, snippet) in sorted(needed.items()):
        gap = argument_gap("prompt", name, kind, snippet, declared)
        if gap is not None:
            report.errors.append(_at(place, where, gap, "snippet_argument"))


def check_unique_arguments(arguments: list[Any], report: DraftReport) -> dict[str, int]:
    """Each argument of a prompt or snippet needs its own name (the database refuses two rows of one
    name, so a draft that has them must be refused before it is saved); returns name -> count."""
    declared: dict[str, int] = {}
    for arg in arguments:
        declared[arg.name] = declared.get(arg.name, 0) + 1
    for name, count in declared.items():
        if count > 1:
            report.errors.append(Problem(_("The argument name '%(name)s' is used %(count)s times; names must be "
                                           "unique.") % {"name": name, "count": count},
                                         code="duplicate_argument", name=name))
    return declared


def registry_resource_exists(uri: str) -> bool:
    """Whether a resource argument's default or suggestion names a resource of the registry."""
    return Resource.objects.filter(uri=uri, archived_at__isnull=True).exists()


def validate_prompt(prompt: Prompt, arguments: list[Any] | None = None,
                    messages: list[Any] | None = None) -> DraftReport:
    """Check a prompt draft; `arguments`/`messages` may be unsaved rows from a form."""
    report = DraftReport()
    arguments = list(prompt.arguments.all()) if arguments is None else arguments
    messages = list(prompt.messages.all()) if messages is None else messages
    if not prompt.description.strip():
        report.warnings.append(Problem(_("The prompt has no description; clients show it in their prompt lists."),
                                       code="no_description"))
    declared = check_unique_arguments(arguments, report)
    for arg in arguments:
        for problem in spec_problems(snapshot_argument(arg), registry_resource_exists):
            report.errors.append(Problem(_("Argument '%(name)s': %(problem)s") % {"name": arg.name, "problem": problem},
                                         code="argument", name=arg.name))
    if not messages:
        report.errors.append(Problem(_("A prompt needs at least one message."), code="no_messages"))
    used: set[str] = set()
    for index, message in enumerate(messages, start=1):
        where, place = _message_label(index), f"message:{index}"
        if message.kind == "text":
            if not message.text.strip():
                report.errors.append(_at(place, where, _("the text is empty."), "empty_text"))
            used.update(template_placeholders(message.text, where, report, place=place))
            needed = check_references(message.text, where, report, place=place)
            check_snippet_arguments(needed, {a.name: a.type for a in arguments}, report, where=where, place=place)
            used.update(name for name in needed if name in declared)  # the others are reported above
        elif message.kind in ("image", "audio"):
            if not message.data_sha256:
                text = _("upload the image file.") if message.kind == "image" else _("upload the audio file.")
                report.errors.append(_at(place, where, text, "file_missing"))
            if not (message.mime_type or "").startswith(message.kind + "/"):
                text = (_("the file type must be image/..., e.g. image/png.") if message.kind == "image"
                        else _("the file type must be audio/..., e.g. audio/mpeg."))
                report.errors.append(_at(place, where, text, "file_type"))
            check_size(message.data_size, where, report, place=place)
        else:  # resource, resource_link
            if message.resource_id is None:
                if not message.uri:
                    report.errors.append(_at(place, where, _("give a URI or choose a registry resource."),
                                             "uri_missing"))
                else:
                    names = template_placeholders(message.uri, _("%(where)s URI") % {"where": where}, report,
                                                  place=place, code="uri_syntax")
                    used.update(names)
                    literal = message.uri
                    for name in names:
                        literal = literal.replace("{{ " + name + " }}", "x").replace("{{" + name + "}}", "x")
                    if not names:
                        try:
                            validate_uri(literal)
                        except InvalidUri as exc:
                            report.errors.append(_at(place, where, exc.message, "invalid_uri"))
                if message.kind == "resource":
                    check_size(message.data_size, where, report, place=place)
                    check_size(len(message.text.encode("utf-8")), where, report, "text", place=place)
    for name in sorted(used - set(declared)):
        report.errors.append(Problem(_("The placeholder {{ %(name)s }} is not a declared argument; add it or fix "
                                       "the spelling.") % {"name": name}, code="undeclared_placeholder", name=name))
    for name in sorted(set(declared) - used):
        report.warnings.append(Problem(_("The argument '%(name)s' is declared but never used in a message.")
                                       % {"name": name}, code="unused_argument", name=name))
    return report


def validate_resource(resource: Resource) -> DraftReport:
    report = DraftReport()
    try:
        validate_uri(resource.uri)
    except InvalidUri as exc:
        report.errors.append(Problem(exc.message, code="invalid_uri"))
    if resource.data_sha256 and resource.text:
        report.errors.append(Problem(_("Give either text or an uploaded file, not both."), code="text_and_file"))
    check_size(resource.data_size, _("Content"), report, place="content")
    check_size(len(resource.text.encode("utf-8")), _("Content"), report, "text", place="content")
    if not resource.data_sha256:
        for name, (kind, snippet) in sorted(check_references(resource.text, _("Content"), report,
                                                             place="content").items()):
            gap = argument_gap("resource", name, kind, snippet, {})
            report.errors.append(_at("content", _("Content"), gap or "", "snippet_argument"))
    if not resource.name.strip():
        report.errors.append(Problem(_("The resource needs a name."), code="no_name"))
    return report


def validate_template(template: ResourceTemplate, variables: list[Any] | None = None) -> DraftReport:
    report = DraftReport()
    try:
        names = set(template_variable_names(template.uri_template))
    except InvalidUri as exc:
        report.errors.append(Problem(exc.message, code="invalid_uri"))
        names = set()
    used = set(template_placeholders(template.body, _("Body"), report, place="body"))
    for name, (kind, snippet) in sorted(check_references(template.body, _("Body"), report, place="body").items()):
        gap = argument_gap("template", name, kind, snippet, dict.fromkeys(names, "text"))
        if gap is not None:
            report.errors.append(_at("body", _("Body"), gap, "snippet_argument"))
    for name in sorted(used - names):
        report.errors.append(Problem(_("The placeholder {{ %(name)s }} is not a variable of the URI template.")
                                     % {"name": name}, code="unknown_placeholder", name=name))
    variables = list(template.variables.all()) if variables is None else variables
    for variable in variables:
        if names and variable.name not in names:
            report.errors.append(Problem(_("Suggestions are given for '%(name)s', which the URI template does not "
                                           "have.") % {"name": variable.name}, code="unknown_variable",
                                         name=variable.name))
    if not template.name.strip():
        report.errors.append(Problem(_("The template needs a name."), code="no_name"))
    return report


def validate_snippet(snippet: Snippet, arguments: list[Any] | None = None) -> DraftReport:
    """A snippet's placeholders must be arguments it declares (the including prompt fills them)."""
    report = DraftReport()
    arguments = list(snippet.arguments.all()) if arguments is None else arguments
    declared = set(check_unique_arguments(arguments, report))
    if not snippet.text.strip():
        report.errors.append(Problem(_("The snippet's text is empty."), code="empty_text", where="text"))
    used = set(template_placeholders(snippet.text, _("Text"), report, place="text"))
    needed = check_references(snippet.text, _("Text"), report, place="text", own=snippet.name)
    check_snippet_arguments(needed, {arg.name: arg.type for arg in arguments}, report, where=_("Text"),
                            place="text")
    for name in sorted(used - declared):
        report.errors.append(Problem(_("The placeholder {{ %(name)s }} is not a declared argument; add it or fix "
                                       "the spelling.") % {"name": name}, code="undeclared_placeholder", name=name))
    return report


def validate_entry(entry: VersionedEntry) -> DraftReport:
    if isinstance(entry, Prompt):
        return validate_prompt(entry)
    if isinstance(entry, Resource):
        return validate_resource(entry)
    if isinstance(entry, ResourceTemplate):
        return validate_template(entry)
    if isinstance(entry, Snippet):
        return validate_snippet(entry)
    raise TypeError(f"not a registry entry: {entry!r}")
