"""Pure rendering: placeholder templates, prompt results and resource-template bodies.

No ORM and no Django here, so the MCP hot path can call these on in-memory snapshots.
The template language is deliberately tiny: `{{ name }}` and nothing else. Editors are not
programmers, so there is no code execution, no attribute access and no file or settings
access; and an argument's value is inserted verbatim in a single pass, so a value that looks
like `{{ other }}` is never interpreted again.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from registry.errors import ArgumentErrors, InvalidArguments, MissingArguments, TemplateSyntaxError
from registry.formats.argtypes import PatternError, check_value, compile_pattern
from registry.formats.uris import validate_uri

PLACEHOLDER_NAME = r"[A-Za-z_][A-Za-z0-9_.-]*"
_OPEN_OR_CLOSE = re.compile(r"\{\{|\}\}|\{%|\{#")
_PLACEHOLDER = re.compile(r"\{\{\s*(" + PLACEHOLDER_NAME + r")\s*\}\}")


@dataclass(frozen=True)
class Template:
    """A parsed template: literal strings alternating with placeholder names."""

    parts: tuple[str, ...]  # even indexes are literals, odd indexes are placeholder names

    @property
    def placeholders(self) -> tuple[str, ...]:
        return self.parts[1::2]

    def render(self, values: Mapping[str, str]) -> str:
        if len(self.parts) == 1:
            return self.parts[0]
        out = list(self.parts)
        for i in range(1, len(out), 2):
            out[i] = values.get(out[i], "")
        return "".join(out)


def _line_of(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def parse_template(text: str) -> Template:
    """Parse `text`, raising TemplateSyntaxError with the line of the first problem."""
    parts: list[str] = []
    pos = 0
    literal_start = 0
    while True:
        marker = _OPEN_OR_CLOSE.search(text, pos)
        if marker is None:
            break
        token = marker.group(0)
        line = _line_of(text, marker.start())
        if token == "}}":
            raise TemplateSyntaxError("'}}' closes a placeholder that was never opened with '{{'.", line)
        if token in ("{%", "{#"):
            raise TemplateSyntaxError(
                f"'{token}' is not supported: only placeholders like {{{{ topic }}}} are allowed.", line
            )
        match = _PLACEHOLDER.match(text, marker.start())
        if match is None:
            close = text.find("}}", marker.end())
            newline = text.find("\n", marker.end())
            if close == -1 or (newline != -1 and newline < close):
                raise TemplateSyntaxError("'{{' is never closed with '}}' on the same line.", line)
            inner = text[marker.end() : close].strip()
            if not inner:
                raise TemplateSyntaxError("Empty placeholder '{{ }}': put an argument name inside.", line)
            raise TemplateSyntaxError(
                f"'{{{{ {inner} }}}}' is not a valid placeholder: use one argument name made of "
                "letters, digits, '_', '-' or '.', starting with a letter or '_'.",
                line,
            )
        parts.append(text[literal_start : marker.start()])
        parts.append(match.group(1))
        pos = literal_start = match.end()
    parts.append(text[literal_start:])
    return Template(tuple(parts))


def placeholder_lines(text: str) -> list[tuple[str, int]]:
    """Each placeholder use in `text` as (name, line), in order (raises on syntax errors)."""
    parse_template(text)
    return [(match.group(1), _line_of(text, match.start())) for match in _PLACEHOLDER.finditer(text)]


def normalise_newlines(text: str) -> str:
    """CRLF (what browsers send from a text box) and lone CR become LF, the one newline clients get."""
    return text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text


def placeholders_in(text: str) -> list[str]:
    """Names used in `text`, in order of first use (raises on syntax errors)."""
    seen: dict[str, None] = {}
    for name in parse_template(text).placeholders:
        seen.setdefault(name, None)
    return list(seen)


def resolve_arguments(
    declared: Sequence[Mapping[str, Any]],
    given: Mapping[str, Any] | None,
    is_resource: Callable[[str], bool] | None = None,
) -> dict[str, str]:
    """Check `given` against the declared arguments and their types, and apply defaults.

    Every problem is collected before anything is raised, so a caller learns all of them at
    once: MissingArguments when required ones are absent and nothing else is wrong, otherwise
    ArgumentErrors listing the missing names and each invalid value with its reason.
    Undeclared extra arguments are ignored, as MCP clients may send context they hold.
    `is_resource` decides whether a URI names a readable registry resource (resource type).
    """
    given = given or {}
    if not isinstance(given, Mapping):
        raise InvalidArguments("Prompt arguments must be an object mapping names to strings.")
    values: dict[str, str] = {}
    missing: list[str] = []
    invalid: list[dict[str, str]] = []
    for arg in declared:
        name = arg["name"]
        if name in given and given[name] is not None:
            value = given[name]
            if not isinstance(value, str):
                invalid.append({"name": name, "reason": f"must be a string, not {type(value).__name__}"})
                continue
            value, reason = check_value(arg, value, is_resource)
            if reason is not None:
                invalid.append({"name": name, "reason": reason})
                continue
            values[name] = value
        elif arg.get("required"):
            missing.append(name)
        else:
            values[name] = arg.get("default") or ""
    if invalid:
        raise ArgumentErrors(missing, invalid)
    if missing:
        raise MissingArguments(missing)
    return values


def _render_uri(template: Template, values: Mapping[str, str]) -> str:
    uri = template.render(values)
    try:
        validate_uri(uri)
    except Exception as exc:  # InvalidUri: the arguments produced something unusable
        raise InvalidArguments(f"The arguments make an invalid URI {uri!r}: {exc}") from exc
    return uri


@dataclass(frozen=True)
class CompiledPrompt:
    """A published prompt version prepared for fast repeated rendering."""

    description: str
    arguments: tuple[Mapping[str, Any], ...]
    messages: tuple[tuple[str, Mapping[str, Any], Template | None], ...]  # (role, block, text or uri template)


def compile_prompt(snapshot: Mapping[str, Any]) -> CompiledPrompt:
    messages = []
    for message in snapshot.get("messages", []):
        block = dict(message["content"])
        template = None
        if block["type"] == "text":
            template = parse_template(block["text"])
        elif block["type"] in ("resource", "resource_link"):
            uri = block["resource"]["uri"] if block["type"] == "resource" else block["uri"]
            template = parse_template(uri)
        messages.append((message["role"], block, template))
    for arg in snapshot.get("arguments", []):
        if arg.get("pattern"):
            # Validation refuses a bad pattern; check_value reports it if one slips through.
            with contextlib.suppress(PatternError):
                compile_pattern(arg["pattern"])  # cached: the render path never compiles again
    return CompiledPrompt(
        description=snapshot.get("description", ""),
        arguments=tuple(snapshot.get("arguments", [])),
        messages=tuple(messages),
    )


# Fills a content block's stored bytes in (image/audio data, embedded resource text or blob).
BlockFiller = Callable[[Mapping[str, Any]], dict[str, Any]]


def render_compiled(
    prompt: CompiledPrompt, arguments: Mapping[str, Any] | None, fill: BlockFiller | None = None,
    is_resource: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """Turn a compiled version plus string arguments into an MCP GetPromptResult.

    Snapshots reference documents by hash; `fill` (from the caller, which knows the content
    store) turns such a block into what clients receive. Without it blocks pass unchanged.
    `is_resource` answers whether a resource-typed argument names a readable registry URI.
    """
    values = resolve_arguments(prompt.arguments, arguments, is_resource)
    messages = []
    for role, block, template in prompt.messages:
        kind = block["type"]
        if kind == "text":
            content: dict[str, Any] = {"type": "text", "text": template.render(values)}  # type: ignore[union-attr]
        elif kind == "resource":
            resource = dict((fill(block) if fill else block)["resource"])
            resource["uri"] = _render_uri(template, values)  # type: ignore[arg-type]
            content = {"type": "resource", "resource": resource}
        elif kind == "resource_link":
            content = dict(block)
            content["uri"] = _render_uri(template, values)  # type: ignore[arg-type]
        else:  # image, audio
            content = fill(block) if fill else dict(block)
        messages.append({"role": role, "content": content})
    result: dict[str, Any] = {"messages": messages}
    if prompt.description:
        result["description"] = prompt.description
    return result


def render_prompt(
    snapshot: Mapping[str, Any], arguments: Mapping[str, Any] | None, fill: BlockFiller | None = None,
    is_resource: Callable[[str], bool] | None = None,
) -> dict[str, Any]:
    """One published prompt version plus string arguments -> exactly the MCP GetPromptResult."""
    return render_compiled(compile_prompt(snapshot), arguments, fill, is_resource)


def render_body(body: str, variables: Mapping[str, str]) -> str:
    """Render a resource-template body with the variables taken from a concrete URI."""
    return parse_template(body).render(variables)
