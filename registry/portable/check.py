"""Checking a loaded document against the format: every entry becomes an EntrySpec, or a problem
naming its file, line, entry and field (registry/portable/format.py describes the format)."""

from __future__ import annotations

import base64
import binascii
import difflib
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.core.exceptions import ValidationError

from registry.conf import max_upload_bytes
from registry.errors import InvalidUri, TemplateSyntaxError
from registry.formats import argtypes
from registry.formats.folders import validate_folder
from registry.formats.references import references_in, without_references
from registry.formats.rendering import placeholders_in
from registry.formats.uris import parse_uri_template, validate_uri
from registry.models.base import PRODUCTION, label_name_validator
from registry.models.prompts import argument_name_validator, prompt_name_validator
from registry.portable.format import (
    ARGUMENT_KEYS,
    CONTENT_KEYS,
    KEY_FIELD,
    PROMPT_KEYS,
    RESOURCE_KEYS,
    SECTIONS,
    SNIPPET_ARGUMENT_KEYS,
    SNIPPET_KEYS,
    TEMPLATE_KEYS,
    TEXT_MIME_SUFFIXES,
    TEXT_MIME_TYPES,
    VARIABLE_KEYS,
    FormatError,
    Path_,
    describe,
)
from registry.portable.parse import Loaded


# ------------------------------------------------------------------------------------------ checking
@dataclass
class EntrySpec:
    """One entry read from the file: its draft data, the labels to publish to, and where it is."""

    kind: str
    section: str
    index: int  # 1-based
    key: str
    data: dict[str, Any]
    labels: list[str]
    warnings: list[str] = field(default_factory=list)  # placeholder syntax etc. (errors when publishing)
    references: list[tuple[str, str]] = field(default_factory=list)  # (resource URI, where) for `from:`
    source: str = ""
    line: int | None = None  # where the entry starts in the file

    @property
    def label(self) -> str:
        return f"{self.section}[{self.index}] ({KEY_FIELD[self.kind]}: {self.key})"

    @property
    def location(self) -> str:
        """'demo.yaml:12: prompts[2] (name: code-review)', for problems found after reading."""
        where = f"{self.source}:{self.line}" if self.line else self.source
        return f"{where}: {self.label}"


class _Checker:
    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        self.problems: list[str] = list(loaded.problems)
        self.spec: EntrySpec | None = None

    def where(self, path: Path_) -> str:
        line = None
        for cut in range(len(path), -1, -1):
            line = self.loaded.lines.get(path[:cut])
            if line is not None:
                break
        prefix = f"{self.loaded.source}:{line}" if line else self.loaded.source
        return f"{prefix}: {describe(path, self.loaded.data)}"

    def error(self, path: Path_, message: str) -> None:
        self.problems.append(f"{self.where(path)}: {message}")

    def warn(self, path: Path_, message: str) -> None:
        if self.spec is not None:
            self.spec.warnings.append(f"{self.where(path)}: {message}")

    # ---- primitives
    def mapping(self, value: Any, path: Path_, allowed: tuple[str, ...], what: str) -> dict[str, Any] | None:
        if not isinstance(value, dict):
            self.error(path, f"expected a mapping ({what}), got {_type_name(value)}.")
            return None
        for key in value:
            if key not in allowed:
                hint = difflib.get_close_matches(str(key), allowed, n=1)
                suggestion = f" Did you mean '{hint[0]}'?" if hint else f" Allowed: {', '.join(allowed)}."
                self.error((*path, key), f"unknown key '{key}'.{suggestion}")
        return value

    def string(self, m: Mapping[str, Any], key: str, path: Path_, *, required: bool = False,
               max_length: int | None = None, check: Callable[[str], None] | None = None) -> str:
        value = m.get(key)
        if value is None:
            if required:
                self.error((*path, key) if key in m else path, f"'{key}' is required.")
            return ""
        if not isinstance(value, str):
            self.error((*path, key), f"expected a string, got {_type_name(value)}"
                       + (" (put it in quotes)." if isinstance(value, (int, float, bool)) else "."))
            return ""
        if required and not value.strip():
            self.error((*path, key), f"'{key}' must not be empty.")
        if max_length is not None and len(value) > max_length:
            self.error((*path, key), f"at most {max_length} characters (this has {len(value)}).")
        if check is not None and value:
            try:
                check(value)
            except ValidationError as exc:
                self.error((*path, key), " ".join(exc.messages))
            except InvalidUri as exc:
                self.error((*path, key), exc.message)
        return value

    def boolean(self, m: Mapping[str, Any], key: str, path: Path_, default: bool) -> bool:
        value = m.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error((*path, key), f"expected true or false, got {_type_name(value)}.")
            return default
        return value

    def strings(self, m: Mapping[str, Any], key: str, path: Path_, *, check: Callable[[str], None] | None = None,
                no_commas: bool = False) -> list[str]:
        value = m.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.error((*path, key), f"expected a list, e.g. [a, b], got {_type_name(value)}.")
            return []
        out = []
        for index, item in enumerate(value, start=1):
            if not isinstance(item, str):
                self.error((*path, key, index), f"expected a string, got {_type_name(item)}.")
                continue
            if no_commas and "," in item:
                self.error((*path, key, index), "a tag cannot contain ','.")
                continue
            if check is not None:
                try:
                    check(item)
                except ValidationError as exc:
                    self.error((*path, key, index), " ".join(exc.messages))
                    continue
            out.append(item)
        return out

    def items(self, m: Mapping[str, Any], key: str, path: Path_, *, required: bool = False) -> list[tuple[Path_, Any]]:
        value = m.get(key)
        if value is None:
            if required:
                self.error(path, f"'{key}' is required.")
            return []
        if not isinstance(value, list):
            self.error((*path, key), f"expected a list, got {_type_name(value)}.")
            return []
        return [((*path, key, index), item) for index, item in enumerate(value, start=1)]

    def placeholders(self, text: str, path: Path_) -> None:
        """Warn of a malformed placeholder or snippet reference (valid references are no placeholders)."""
        try:
            references_in(text)
            placeholders_in(without_references(text))
        except TemplateSyntaxError as exc:
            self.warn(path, exc.message)

    def labels(self, m: Mapping[str, Any], path: Path_) -> list[str]:
        if "labels" not in m or m["labels"] is None:
            return [PRODUCTION]
        labels = self.strings(m, "labels", path, check=label_name_validator)
        return list(dict.fromkeys(labels))

    # ---- bytes and side files
    def payload(self, m: Mapping[str, Any], path: Path_, *, mime_type: str,
                text_allowed: bool) -> tuple[str, bytes | None]:
        """(text, data) from exactly one of text/base64/file (none given: empty text)."""
        given = [k for k in (("text",) if text_allowed else ()) + ("base64", "file") if m.get(k) is not None]
        if len(given) > 1:
            self.error(path, f"give only one of {', '.join(given)}.")
            return "", None
        if not given:
            return "", None
        key = given[0]
        if key == "text":
            value = self.string(m, "text", path)
            self._check_size(len(value.encode("utf-8")), (*path, "text"))
            return value, None
        if key == "base64":
            encoded = self.string(m, "base64", path)
            try:
                decoded = base64.b64decode("".join(encoded.split()), validate=True)
            except (binascii.Error, ValueError):
                self.error((*path, "base64"), "this is not valid base64.")
                return "", None
            self._check_size(len(decoded), (*path, "base64"))
            return "", decoded or None
        raw = self._side_file(self.string(m, "file", path), (*path, "file"))
        if raw is None:
            return "", None
        if text_allowed and _is_text_type(mime_type):
            try:
                return raw.decode("utf-8"), None
            except UnicodeDecodeError:
                pass
        return "", raw or None

    def _check_size(self, size: int, path: Path_) -> bool:
        limit = max_upload_bytes()
        if size > limit:
            self.error(path, f"the content is {size:,} bytes; the limit is {limit:,} bytes.")
            return False
        return True

    def _side_file(self, name: str, path: Path_) -> bytes | None:
        if not name:
            return None
        base = self.loaded.base_dir.resolve()
        target = (base / name).resolve()
        if Path(name).is_absolute() or not target.is_relative_to(base):
            self.error(path, f"'{name}' must be a path inside {base} (relative to the YAML file).")
            return None
        self.loaded.side_files.add(target)
        if not target.is_file():
            self.error(path, f"the file {target} does not exist.")
            return None
        if not self._check_size(target.stat().st_size, path):
            return None
        raw = target.read_bytes()
        self.loaded.side_digests[target] = hashlib.sha256(raw).hexdigest()  # of the bytes read, for the notes
        return raw


def _type_name(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "true/false", int: "a number",
            float: "a number", type(None): "nothing"}.get(type(value), type(value).__name__)


def _is_text_type(mime_type: str) -> bool:
    mime = (mime_type or "").split(";", 1)[0].strip().lower()
    return mime.startswith("text/") or mime in TEXT_MIME_TYPES or mime.endswith(TEXT_MIME_SUFFIXES)


def _check_uri(value: str) -> None:
    validate_uri(value)


def _check_placeholder_uri(value: str) -> None:
    """A URI that may be made from {{ argument }} placeholders: checked only when it has none (as on publish)."""
    if "{{" not in value and "}}" not in value:
        validate_uri(value)


def _check_template(value: str) -> None:
    parse_uri_template(value)


# ------------------------------------------------------------------------------------------ entries
def _argument_type(c: _Checker, a: Mapping[str, Any], path: Path_) -> dict[str, Any]:
    """An argument's type and bounds, in draft-data vocabulary (see registry/formats/argtypes.py).

    Only what the file gives is returned, so an untyped argument reads exactly as before types
    existed; the draft writer fills in the rest (text, no bounds)."""
    kind = c.string(a, "type", path) or argtypes.TEXT
    if kind not in argtypes.TYPES:
        c.error((*path, "type"), f"unknown type '{kind}'; use one of: {', '.join(argtypes.TYPES)}.")
        kind = argtypes.TEXT
    typed = {
        "type": kind, "choices": c.strings(a, "choices", path, check=_one_line),
        "pattern": c.string(a, "pattern", path),
        "min_length": _count(c, a, "min_length", path), "max_length": _count(c, a, "max_length", path),
        "minimum": _number(c, a, "min", path), "maximum": _number(c, a, "max", path),
    }
    return {key: value for key, value in typed.items()
            if value not in ("", None, []) and not (key == "type" and value == argtypes.TEXT)}


def _one_line(value: str) -> None:
    if "\n" in value or "\r" in value or not value.strip():
        raise ValidationError("a choice must be a single, non-empty line.")


def _count(c: _Checker, a: Mapping[str, Any], key: str, path: Path_) -> int | None:
    value = a.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**31:
        c.error((*path, key), f"expected a whole number of characters (0 or more), got {value!r}.")
        return None
    return value


def _number(c: _Checker, a: Mapping[str, Any], key: str, path: Path_) -> int | float | None:
    value = a.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        c.error((*path, key), f"expected a number, got {_type_name(value)}.")
        return None
    if isinstance(value, int) and abs(value) >= 2**53:
        c.error((*path, key), "the number is too large.")
        return None
    return value


def _argument_default(c: _Checker, a: Mapping[str, Any], path: Path_, kind: str) -> str:
    """`default: 5` and `default: true` are fine for numbers and booleans; stored as MCP sends them."""
    typed = argtypes.typed_default_text(kind, a.get("default"))
    return typed if typed is not None else c.string(a, "default", path)


def _spec(argument: Mapping[str, Any]) -> dict[str, Any]:
    """Draft-data argument -> the snapshot spec registry/formats/argtypes.py checks."""
    spec = {"name": argument["name"], "type": argument.get("type", argtypes.TEXT), "default": argument["default"],
            "suggestions": argument["suggestions"]}
    for key, spec_key in (("choices", "choices"), ("min_length", "minLength"), ("max_length", "maxLength"),
                          ("pattern", "pattern"), ("minimum", "minimum"), ("maximum", "maximum")):
        if argument.get(key) not in (None, "", []):
            spec[spec_key] = argument[key]
    return spec


def _prompt(c: _Checker, raw: Any, path: Path_) -> dict[str, Any] | None:
    m = c.mapping(raw, path, PROMPT_KEYS, "a prompt")
    if m is None:
        return None
    data: dict[str, Any] = {
        "name": c.string(m, "name", path, required=True, max_length=128, check=prompt_name_validator),
        "title": c.string(m, "title", path, max_length=200),
        "description": c.string(m, "description", path),
        "folder": c.string(m, "folder", path, check=validate_folder),
        "tags": c.strings(m, "tags", path, no_commas=True),
        "arguments": [],
        "messages": [],
    }
    seen: set[str] = set()
    for arg_path, raw_arg in c.items(m, "arguments", path):
        a = c.mapping(raw_arg, arg_path, ARGUMENT_KEYS, "an argument")
        if a is None:
            continue
        name = c.string(a, "name", arg_path, required=True, max_length=64, check=argument_name_validator)
        if name in seen:
            c.error((*arg_path, "name"), f"the argument '{name}' is declared twice.")
        seen.add(name)
        problems_before = len(c.problems)
        argument = {
            "name": name, "title": c.string(a, "title", arg_path, max_length=200),
            "description": c.string(a, "description", arg_path),
            "required": c.boolean(a, "required", arg_path, False),
            "suggestions": c.strings(a, "suggestions", arg_path),
            **_argument_type(c, a, arg_path),
        }
        argument["default"] = _argument_default(c, a, arg_path, argument.get("type", argtypes.TEXT))
        data["arguments"].append(argument)
        if len(c.problems) == problems_before:  # judge the declaration only once its fields parse
            for problem in argtypes.spec_problems(_spec(argument)):
                c.error(arg_path, problem)
    messages = c.items(m, "messages", path, required=True)
    if "messages" in m and not messages:
        c.error((*path, "messages"), "a prompt needs at least one message.")
    for msg_path, raw_msg in messages:
        message = _message(c, raw_msg, msg_path)
        if message is not None:
            data["messages"].append(message)
    return data


def _message(c: _Checker, raw: Any, path: Path_) -> dict[str, Any] | None:
    m = c.mapping(raw, path, ("role", *CONTENT_KEYS), "a message")
    if m is None:
        return None
    role = m.get("role", "user")
    if role not in ("user", "assistant"):
        c.error((*path, "role"), f"the role must be user or assistant, not {role!r}.")
    kinds = [k for k in CONTENT_KEYS if k in m]
    if len(kinds) != 1:
        c.error(path, "give exactly one of " + ", ".join(CONTENT_KEYS)
                + (f" (found {', '.join(kinds)})." if kinds else "."))
        return None
    kind = kinds[0]
    item: dict[str, Any] = {"role": role, "kind": kind}
    if kind == "text":
        item["text"] = c.string(m, "text", path)  # an empty text is a publish-time problem, as in the admin
        c.placeholders(item["text"], (*path, "text"))
        return item
    body_path = (*path, kind)
    if kind in ("image", "audio"):
        b = c.mapping(m[kind], body_path, ("mime_type", "base64", "file"), f"{kind}: {{mime_type, base64 | file}}")
        if b is None:
            return None
        mime = c.string(b, "mime_type", body_path, required=True, max_length=100)
        if mime and not mime.startswith(kind + "/"):
            c.error((*body_path, "mime_type"), f"an {kind} needs a {kind}/... MIME type, e.g. "
                    f"{'image/png' if kind == 'image' else 'audio/mpeg'}.")
        if b.get("base64") is None and b.get("file") is None:
            c.error(body_path, "give the bytes as base64: or file:.")
        _text, raw_bytes = c.payload(b, body_path, mime_type=mime, text_allowed=False)
        item.update(mime_type=mime, data=raw_bytes)
        return item
    if kind == "resource":
        b = c.mapping(m[kind], body_path, ("uri", "mime_type", "text", "base64", "file", "from"),
                      "resource: {uri, mime_type, text | base64 | file} or {from: URI}")
        if b is None:
            return None
        if "from" in b:
            return _from_reference(c, b, body_path, item, allowed_with=())
        item["uri"] = c.string(b, "uri", body_path, required=True, max_length=2048, check=_check_placeholder_uri)
        c.placeholders(item["uri"], (*body_path, "uri"))
        item["mime_type"] = c.string(b, "mime_type", body_path, max_length=100)
        item["text"], item["data"] = c.payload(b, body_path, mime_type=item["mime_type"], text_allowed=True)
        return item
    b = c.mapping(m[kind], body_path, ("uri", "name", "mime_type", "from"),
                  "resource_link: {uri, name, mime_type} or {from: URI, name}")
    if b is None:
        return None
    if "from" in b:
        return _from_reference(c, b, body_path, item, allowed_with=("name",))
    item["uri"] = c.string(b, "uri", body_path, required=True, max_length=2048, check=_check_placeholder_uri)
    c.placeholders(item["uri"], (*body_path, "uri"))
    item["link_name"] = c.string(b, "name", body_path, max_length=200)
    item["mime_type"] = c.string(b, "mime_type", body_path, max_length=100)
    return item


def _from_reference(c: _Checker, b: dict[str, Any], path: Path_, item: dict[str, Any],
                    allowed_with: tuple[str, ...]) -> dict[str, Any]:
    extra = [k for k in b if k != "from" and k not in allowed_with]
    if extra:
        c.error(path, f"'from' takes the content from the registry resource; remove {', '.join(extra)}.")
    item["resource_uri"] = c.string(b, "from", path, required=True, check=_check_uri)
    if "name" in allowed_with:
        item["link_name"] = c.string(b, "name", path, max_length=200)
    if c.spec is not None and item["resource_uri"]:
        c.spec.references.append((item["resource_uri"], c.where((*path, "from"))))
    return item


def _described(c: _Checker, m: Mapping[str, Any], path: Path_) -> dict[str, Any]:
    """Fields resources and templates share."""
    audience = m.get("audience")
    if isinstance(audience, str):
        audience = [audience]
    chosen: list[str] = []
    if audience is not None:
        if not isinstance(audience, list) or any(a not in ("user", "assistant") for a in audience):
            c.error((*path, "audience"), "the audience is a list of user and/or assistant, e.g. [user].")
        else:
            chosen = [a for a in ("user", "assistant") if a in audience]
    priority = m.get("priority")
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, (int, float)) or not 0 <= priority <= 1:
            c.error((*path, "priority"), "the priority is a number from 0 to 1.")
            priority = None
        else:
            priority = float(priority)
    return {
        "name": c.string(m, "name", path, required=True, max_length=200),
        "title": c.string(m, "title", path, max_length=200),
        "description": c.string(m, "description", path),
        "folder": c.string(m, "folder", path, check=validate_folder),
        "mime_type": c.string(m, "mime_type", path, max_length=100),
        "tags": c.strings(m, "tags", path, no_commas=True),
        "audience": ",".join(chosen),
        "priority": priority,
    }


def _resource(c: _Checker, raw: Any, path: Path_) -> dict[str, Any] | None:
    m = c.mapping(raw, path, RESOURCE_KEYS, "a resource")
    if m is None:
        return None
    data = {"uri": c.string(m, "uri", path, required=True, max_length=2048, check=_check_uri), **_described(c, m, path)}
    data["text"], data["data"] = c.payload(m, path, mime_type=data["mime_type"], text_allowed=True)
    return data


def _template(c: _Checker, raw: Any, path: Path_) -> dict[str, Any] | None:
    m = c.mapping(raw, path, TEMPLATE_KEYS, "a resource template")
    if m is None:
        return None
    data = {"uri_template": c.string(m, "uri_template", path, required=True, max_length=2048, check=_check_template),
            **_described(c, m, path), "body": c.string(m, "body", path), "variables": []}
    c.placeholders(data["body"], (*path, "body"))
    seen: set[str] = set()
    for var_path, raw_var in c.items(m, "variables", path):
        v = c.mapping(raw_var, var_path, VARIABLE_KEYS, "a variable")
        if v is None:
            continue
        name = c.string(v, "name", var_path, required=True, max_length=64)
        if name in seen:
            c.error((*var_path, "name"), f"the variable '{name}' is listed twice.")
        seen.add(name)
        data["variables"].append({"name": name, "description": c.string(v, "description", var_path),
                                  "suggestions": c.strings(v, "suggestions", var_path)})
    data["variables"].sort(key=lambda v: v["name"])  # stored (and exported) by name
    return data


def _snippet(c: _Checker, raw: Any, path: Path_) -> dict[str, Any] | None:
    m = c.mapping(raw, path, SNIPPET_KEYS, "a snippet")
    if m is None:
        return None
    data: dict[str, Any] = {
        "name": c.string(m, "name", path, required=True, max_length=128, check=prompt_name_validator),
        "description": c.string(m, "description", path),
        "folder": c.string(m, "folder", path, check=validate_folder),
        "tags": c.strings(m, "tags", path, no_commas=True),
        "text": c.string(m, "text", path, required=True),
        "arguments": [],
    }
    c.placeholders(data["text"], (*path, "text"))
    seen: set[str] = set()
    for arg_path, raw_arg in c.items(m, "arguments", path):
        a = c.mapping(raw_arg, arg_path, SNIPPET_ARGUMENT_KEYS, "an argument")
        if a is None:
            continue
        name = c.string(a, "name", arg_path, required=True, max_length=64, check=argument_name_validator)
        if name in seen:
            c.error((*arg_path, "name"), f"the argument '{name}' is declared twice.")
        seen.add(name)
        kind = c.string(a, "type", arg_path) or argtypes.TEXT
        if kind not in argtypes.TYPES:
            c.error((*arg_path, "type"), f"unknown type '{kind}'; use one of {', '.join(argtypes.TYPES)}.")
        data["arguments"].append({"name": name, "description": c.string(a, "description", arg_path), "type": kind})
    return data


READERS = {"snippet": _snippet, "prompt": _prompt, "resource": _resource, "template": _template}


def read_entries(loaded: Loaded) -> list[EntrySpec]:
    """Check the whole document and turn it into entries; raise FormatError listing every problem."""
    c = _Checker(loaded)
    specs: list[EntrySpec] = []
    doc = loaded.data
    if doc is None:
        doc = {}
    if not isinstance(doc, dict):
        raise FormatError([f"{loaded.source}: the file must be a mapping with prompts:, resources: and/or templates:."])
    c.mapping(doc, (), tuple(SECTIONS), "the document")
    for section, kind in SECTIONS.items():
        seen: dict[str, int] = {}
        for path, raw in c.items(doc, section, ()):
            index = path[1]
            key = raw.get(KEY_FIELD[kind]) if isinstance(raw, dict) else None
            spec = EntrySpec(kind, section, index, key if isinstance(key, str) else "", {}, [],
                             source=loaded.source, line=loaded.lines.get(path))
            c.spec = spec
            data = READERS[kind](c, raw, path)
            c.spec = None
            if data is None:
                continue
            spec.data = data
            spec.labels = c.labels(raw, path)
            if "released" in raw and raw["released"] is not None and not isinstance(raw["released"], dict):
                c.error((*path, "released"),
                        "expected a mapping of label to version (export writes it; import ignores it).")
            if spec.key in seen:
                c.error((*path, KEY_FIELD[kind]), f"already defined by {section}[{seen[spec.key]}].")
            seen.setdefault(spec.key, index)
            specs.append(spec)
    if c.problems:
        raise FormatError(c.problems)
    return specs
