"""Typed prompt arguments: what each type accepts, how it is described, and its form schema.

MCP sends every prompt argument as a string and knows nothing of types, so the registry
declares them itself and enforces them when it renders: an editor can say "a whole number
from 1 to 10" or "one of: formal, warm" and no client can send anything else. Pure Python
(no ORM), so the MCP hot path checks values on in-memory snapshots.

An argument spec is the argument's snapshot dict: `type` (absent means text) plus the bounds
that matter for it: `choices` (enum), `minLength`/`maxLength`/`pattern` (text, string),
`minimum`/`maximum` (integer, number). Untyped arguments have none of these keys, so their
snapshots, content hashes and behaviour are exactly what they were before types existed.

Patterns use RE2 (the google-re2 bindings): matching takes time linear in the input, so no
pattern, however hostile, can hang the server the way a backtracking `re` pattern such as
`(a+)+$` can; constructs RE2 cannot run in linear time (backreferences, lookaround) are
refused when the draft is checked, with the reason. Linear is not enough on its own: asked for
the spans of capture groups, RE2 leaves its fast DFA for its NFA, and `(\\w+\\s?){1,50}$`
took 29 s on a 1 MB value. So patterns are compiled with ``never_capture`` (a whole-value match
needs no submatch: the DFA answers it, 1 MB in milliseconds), a patterned value longer than
PATTERN_VALUE_MAX_LENGTH is refused unless the argument sets its own `maxLength`, and the MCP
handler checks long values off the event loop (mcp_endpoint/handlers/catalogs.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

import re2

from registry.errors import InvalidUri
from registry.formats.uris import validate_uri

TEXT, STRING, ENUM, INTEGER, NUMBER, BOOLEAN, RESOURCE = (
    "text", "string", "enum", "integer", "number", "boolean", "resource")
TYPES = (TEXT, STRING, ENUM, INTEGER, NUMBER, BOOLEAN, RESOURCE)
# Which bound keys (snapshot spelling) carry meaning for each type.
BOUNDS: dict[str, tuple[str, ...]] = {
    TEXT: ("minLength", "maxLength", "pattern"),
    STRING: ("minLength", "maxLength", "pattern"),
    ENUM: ("choices",),
    INTEGER: ("minimum", "maximum"),
    NUMBER: ("minimum", "maximum"),
    BOOLEAN: (),
    RESOURCE: (),
}
ALL_BOUNDS = ("choices", "minLength", "maxLength", "pattern", "minimum", "maximum")
MAX_PATTERN_LENGTH = 500
# A value checked against a pattern is at most this long unless the argument sets maxLength.
PATTERN_VALUE_MAX_LENGTH = 10_000
MAX_NUMBER_LENGTH = 100  # longer digit strings are refused before int()/float() see them
_PATTERN_MEMORY = 1 << 20  # bytes RE2 may use for one compiled pattern
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_TRUE, _FALSE = "true", "false"


class PatternError(ValueError):
    """A pattern that cannot be used; the message says why in an editor's words."""


def type_of(spec: Mapping[str, Any]) -> str:
    return spec.get("type") or TEXT


def is_typed(spec: Mapping[str, Any]) -> bool:
    return type_of(spec) != TEXT or any(spec.get(key) not in (None, "", []) for key in ALL_BOUNDS)


def number_text(value: float | int) -> str:
    """1.0 -> '1', 0.5 -> '0.5': how bounds are shown and stored."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def typed_default_text(kind: str, value: object) -> str | None:
    """A default given as a number (integer/number arguments) or true/false (boolean ones), as
    the text MCP sends it; None: not such a value, so the default must be given as text.
    Prompts as code and the REST API both read `default: 5` with this rule."""
    if kind in (INTEGER, NUMBER) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return number_text(value)
    if kind == BOOLEAN and isinstance(value, bool):
        return "true" if value else "false"
    return None


def plain_number(value: float | int | None) -> float | int | None:
    """A bound as JSON should hold it: whole numbers as integers."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return int(value)
    return value


# ------------------------------------------------------------------------------------ patterns
@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    """RE2-compile `pattern` or raise PatternError; cached, so rendering never compiles twice."""
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise PatternError(f"the pattern is {len(pattern)} characters long; at most {MAX_PATTERN_LENGTH} are allowed.")
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _PATTERN_MEMORY
    options.never_capture = True  # groups only group: a match with no submatch stays on RE2's DFA
    try:
        return re2.compile(pattern, options=options)
    except UnicodeEncodeError:
        raise PatternError("the pattern contains characters that are not valid text.") from None
    except re2.error as exc:
        reason = exc.args[0].decode("utf-8", "replace") if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise PatternError(f"the pattern {pattern!r} cannot be used: {reason} (backreferences and "
                           "lookahead/lookbehind are not supported).") from None


# ------------------------------------------------------------------------------------ values
def check_value(spec: Mapping[str, Any], value: str,
                is_resource: Callable[[str], bool] | None = None) -> tuple[str, str | None]:
    """(value to render, reason it is refused or None). Values arrive as strings.

    Integers and booleans are rendered in their plain form ('+7' -> '7', 'TRUE' -> 'true');
    everything else is rendered as given. `is_resource` says whether a URI names a registry
    resource the caller may read; without it a resource argument only has to be a valid URI.
    """
    kind = type_of(spec)
    if kind in (TEXT, STRING):
        if kind == STRING and ("\n" in value or "\r" in value):
            return value, "must be a single line"
        low, high = spec.get("minLength"), spec.get("maxLength")
        if low is not None and len(value) < low:
            return value, f"must be at least {low} characters long (got {len(value)})"
        if high is not None and len(value) > high:
            return value, f"must be at most {high} characters long (got {len(value)})"
        pattern = spec.get("pattern")
        if pattern and high is None and len(value) > PATTERN_VALUE_MAX_LENGTH:
            return value, (f"must be at most {PATTERN_VALUE_MAX_LENGTH} characters long (got {len(value)}); "
                           "set a maximum length to allow longer values")
        if pattern:
            try:
                compiled = compile_pattern(pattern)
            except PatternError as exc:  # a published pattern always compiles; be safe anyway
                return value, str(exc)
            try:
                matched = compiled.fullmatch(value) is not None
            except UnicodeEncodeError:  # lone surrogates: RE2 matches UTF-8 only
                return value, "must be valid text"
            if not matched:
                return value, f"must match the pattern {pattern}"
        return value, None
    if kind == ENUM:
        choices = list(spec.get("choices") or ())
        if value not in choices:
            return value, "must be one of: " + ", ".join(choices)
        return value, None
    if kind in (INTEGER, NUMBER):
        return _check_number(spec, kind, value)
    if kind == BOOLEAN:
        lowered = value.strip().lower()
        if lowered not in (_TRUE, _FALSE):
            return value, "must be true or false"
        return lowered, None
    if kind == RESOURCE:
        try:
            validate_uri(value)
        except InvalidUri as exc:
            return value, f"must be the URI of a registry resource ({exc.reason})"
        if is_resource is not None and not is_resource(value):
            return value, "must be the URI of a registry resource; there is none with this URI"
        return value, None
    return value, f"has an unknown type {kind!r}"


def _check_number(spec: Mapping[str, Any], kind: str, value: str) -> tuple[str, str | None]:
    text = value.strip()
    low, high = spec.get("minimum"), spec.get("maximum")
    refusal = f"must be {range_text(kind, low, high)}"
    if len(text) > MAX_NUMBER_LENGTH or not (_INTEGER if kind == INTEGER else _NUMBER).fullmatch(text):
        return value, refusal
    number: float | int = int(text) if kind == INTEGER else float(text)
    if isinstance(number, float) and not math.isfinite(number):
        return value, refusal
    if (low is not None and number < low) or (high is not None and number > high):
        return value, refusal
    return (str(number) if kind == INTEGER else text), None


def range_text(kind: str, low: float | None, high: float | None) -> str:
    what = "a whole number" if kind == INTEGER else "a number"
    if low is not None and high is not None:
        return f"{what} from {number_text(low)} to {number_text(high)}"
    if low is not None:
        return f"{what} of at least {number_text(low)}"
    if high is not None:
        return f"{what} of at most {number_text(high)}"
    return what


# ------------------------------------------------------------------------------------ descriptions
def constraint_text(spec: Mapping[str, Any]) -> str:
    """What a client that shows only text should tell its user, e.g. 'one of: formal, warm'."""
    kind = type_of(spec)
    parts: list[str] = []
    if kind == ENUM:
        parts.append("one of: " + ", ".join(spec.get("choices") or ()))
    elif kind in (INTEGER, NUMBER):
        parts.append(range_text(kind, spec.get("minimum"), spec.get("maximum")))
    elif kind == BOOLEAN:
        parts.append("true or false")
    elif kind == RESOURCE:
        parts.append("the URI of a registry resource")
    else:
        if kind == STRING:
            parts.append("a single line")
        low, high = spec.get("minLength"), spec.get("maxLength")
        if low is not None and high is not None:
            parts.append(f"{low} to {high} characters")
        elif low is not None:
            parts.append(f"at least {low} characters")
        elif high is not None:
            parts.append(f"at most {high} characters")
        if spec.get("pattern"):
            parts.append(f"matching the pattern {spec['pattern']}")
    return ", ".join(parts)


def listed_description(spec: Mapping[str, Any]) -> str:
    """The argument description sent to clients: the editor's text plus the constraint."""
    description = spec.get("description") or ""
    hint = constraint_text(spec)
    if not hint:
        return description
    if not description:
        return hint[0].upper() + hint[1:]
    return f"{description} ({hint})"


# ------------------------------------------------------------------------------------ elicitation
def form_property(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The spec as an elicitation form field (MCP's restricted JSON Schema, PrimitiveSchemaDefinition)."""
    kind = type_of(spec)
    prop: dict[str, Any]
    if kind == ENUM:
        prop = {"type": "string", "enum": list(spec.get("choices") or ())}
    elif kind in (INTEGER, NUMBER):
        prop = {"type": kind}
        for key in ("minimum", "maximum"):
            if spec.get(key) is not None:
                prop[key] = plain_number(spec[key])
    elif kind == BOOLEAN:
        prop = {"type": "boolean"}
    elif kind == RESOURCE:
        prop = {"type": "string", "format": "uri"}
    else:
        prop = {"type": "string"}
        for key in ("minLength", "maxLength"):
            if spec.get(key) is not None:
                prop[key] = spec[key]
    prop["title"] = spec.get("title") or spec["name"]
    description = listed_description(spec)
    if description:
        prop["description"] = description
    return prop


def form_schema(specs: list[Mapping[str, Any]]) -> dict[str, Any]:
    """An elicitation `requestedSchema` asking for every argument in `specs` (all required)."""
    return {"type": "object", "properties": {s["name"]: form_property(s) for s in specs},
            "required": [s["name"] for s in specs]}


def from_form(spec: Mapping[str, Any], value: Any) -> str | None:
    """A value a client's form returned (string, number or boolean) as the string MCP would send.

    None when the value has no string form for this argument (lists, objects); the render then
    reports the argument as missing or invalid like any other."""
    if isinstance(value, bool):
        return _TRUE if value else _FALSE
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return number_text(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return value
    return None


# ------------------------------------------------------------------------------------ declarations
_BOUND_WORDS = {"choices": "choices", "minLength": "a minimum length", "maxLength": "a maximum length",
                "pattern": "a pattern", "minimum": "a minimum", "maximum": "a maximum"}
_BOUND_TYPES = {"choices": "'one of a list' (enum)", "minLength": "text", "maxLength": "text",
                "pattern": "text", "minimum": "number", "maximum": "number"}


def spec_problems(spec: Mapping[str, Any], is_resource: Callable[[str], bool] | None = None) -> list[str]:
    """What is wrong with an argument's declaration, each worded for an editor (empty: fine).

    Checked on publish (and by the admin form and the importer): an unknown type, bounds the
    type does not use, bounds that contradict each other, an enum without choices, a pattern
    RE2 cannot run, and a default or suggestion the argument itself would refuse.
    """
    kind = type_of(spec)
    if kind not in TYPES:
        return [f"the type {kind!r} is unknown; use one of: {', '.join(TYPES)}."]
    problems = []
    for key in ALL_BOUNDS:
        if spec.get(key) not in (None, "", []) and key not in BOUNDS[kind]:
            problems.append(f"{_BOUND_WORDS[key]} applies only to {_BOUND_TYPES[key]} arguments, not to {kind}.")
    choices = list(spec.get("choices") or ())
    if kind == ENUM:
        if not choices:
            problems.append("an argument of type enum needs at least one choice.")
        duplicates = sorted({c for c in choices if choices.count(c) > 1})
        if duplicates:
            problems.append("the choice(s) " + ", ".join(duplicates) + " are listed more than once.")
    low, high = spec.get("minLength"), spec.get("maxLength")
    if low is not None and high is not None and low > high:
        problems.append(f"the minimum length {low} is larger than the maximum length {high}.")
    low, high = spec.get("minimum"), spec.get("maximum")
    for key, bound in (("minimum", low), ("maximum", high)):
        if bound is not None and not math.isfinite(bound):
            problems.append(f"the {key} must be a finite number.")
        elif kind == INTEGER and bound is not None and not float(bound).is_integer():
            problems.append(f"the {key} of a whole-number argument must be a whole number, not {number_text(bound)}.")
    if low is not None and high is not None and low > high:
        problems.append(f"the minimum {number_text(low)} is larger than the maximum {number_text(high)}.")
    if spec.get("pattern") and "pattern" in BOUNDS[kind]:
        try:
            compile_pattern(spec["pattern"])
        except PatternError as exc:
            problems.append(str(exc))
    if problems:
        return problems  # values cannot be judged against a broken declaration
    default = spec.get("default")
    if default:
        _, reason = check_value(spec, default, is_resource)
        if reason is not None:
            problems.append(f"the default {default!r} {reason}.")
    for suggestion in spec.get("suggestions") or ():
        _, reason = check_value(spec, suggestion, is_resource)
        if reason is not None:
            problems.append(f"the suggestion {suggestion!r} {reason}.")
    return problems
