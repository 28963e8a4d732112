"""The prompts-as-code YAML format: parse, check and dump. No database access here.

One file holds three optional top-level lists; every other top-level key is an error::

    prompts:
      - name: code-review                  # required; the MCP prompt name
        title: Code review                 # optional
        description: Review a diff ...     # optional, but clients show it
        tags: [engineering, review]        # optional
        labels: [production, staging]      # labels to point at the version --publish makes (default [production])
        arguments:
          - name: language                 # required
            title: Language                # optional
            description: ...               # optional
            required: true                 # optional, default false (as in MCP)
            default: python                # optional; used when an optional argument is not given
            suggestions: [python, go]      # optional; offered by completion/complete
            type: enum                     # optional: text (default), string, enum, integer, number,
                                           #   boolean, resource; values are checked on prompts/get
            choices: [python, go, rust]    # enum: the allowed values
            # text/string: min_length, max_length, pattern (the whole value must match; RE2 syntax)
            # integer/number: min, max
        messages:                          # required; role defaults to user; ONE content key each:
          - {role: user, text: "Review this {{ language }} diff"}
          - {role: user, image: {mime_type: image/png, base64: iVBOR...}}        # or file: logo.png
          - {role: user, audio: {mime_type: audio/wav, file: hello.wav}}
          - {role: user, resource: {uri: "docs://x", mime_type: text/plain, text: ...}}  # or base64/file
          - {role: user, resource: {from: "docs://style-guide"}}   # embed a registry resource (frozen on publish)
          - {role: assistant, resource_link: {uri: "https://...", name: spec, mime_type: text/html}}
          - {role: assistant, resource_link: {from: "docs://style-guide"}}  # link a registry resource
    resources:
      - uri: docs://style-guide            # required
        name: style-guide                  # required
        title, description, mime_type      # optional strings
        tags: [...]                        # optional
        audience: [user, assistant]        # optional annotation
        priority: 0.8                      # optional annotation, 0..1
        text: ... | base64: ... | file: style-guide.md    # at most one; file is relative to this YAML file
        labels: [production]
    templates:
      - uri_template: tickets://{project}/{id}   # required, RFC 6570
        name: ticket                       # required
        title, description, mime_type, tags, audience, priority   # as for resources
        body: "Ticket {{ id }} of {{ project }}"                  # {{ variable }} from the URI
        variables:
          - {name: project, description: ..., suggestions: [web, api]}
        labels: [production]

Rules:
- Unknown keys are errors, so typos never pass silently; duplicate keys and duplicate entries too.
- Each listed entry's draft becomes exactly what the file says: a key left out means empty.
  Entries not in the file are left alone (nothing is deleted).
- `file:` paths are relative to the YAML file and must stay inside its folder. A side file
  with a text MIME type (text/*, JSON, XML, YAML) that is valid UTF-8 is stored as text,
  anything else as bytes. Export always writes text inline and bytes as `base64:`.
- `from:` names a registry resource by URI (defined in the same file or already in the
  registry); an embedded one is frozen into the prompt version when it is published.
- Inline resource links carry uri, name and mime_type only; a link's title and description
  come from the registry resource, so use `from:` for those.
- `released: {production: 3, staging: 4}` is written by export for information; import ignores it.
  Export writes `labels:` as the labels that point at the newest version, so exporting and
  re-importing with --publish moves nothing.
- Error messages name the file and line, the entry and the field, with 1-based list indexes
  as in the audit log: `demo.yaml:12: prompts[2] (name: code-review): messages[1].text: ...`.
"""

from __future__ import annotations

import base64
import binascii
import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping

import yaml
from django.core.exceptions import ValidationError

from registry.formats import argtypes
from registry.errors import InvalidUri, RegistryError, TemplateSyntaxError
from registry.models.base import PRODUCTION, label_name_validator
from registry.models.prompts import argument_name_validator, prompt_name_validator
from registry.formats.rendering import placeholders_in
from registry.authoring.schema import schema_of
from registry.formats.uris import parse_uri_template, validate_uri
from registry.conf import max_document_bytes, max_upload_bytes
from registry.portable.yamlbuild import EventBuilder

# libyaml's reader, when PyYAML was built with it (the pure-Python one otherwise).
FAST_LOADER: type | None = getattr(yaml, "CSafeLoader", None)

SECTIONS = {"prompts": "prompt", "resources": "resource", "templates": "template"}
KEY_FIELD = {"prompt": "name", "resource": "uri", "template": "uri_template"}
# An entry's keys are its snapshot fields' (registry/authoring/schema.py `portable`), then labels/released.
PROMPT_KEYS = schema_of("prompt").portable_keys()
ARGUMENT_KEYS = tuple(key for column in schema_of("prompt").table("arguments").columns  # type: ignore[union-attr]
                      for key in column.portable)
RESOURCE_KEYS = schema_of("resource").portable_keys()
TEMPLATE_KEYS = schema_of("template").portable_keys()
VARIABLE_KEYS = tuple(key for column in schema_of("template").table("variables").columns  # type: ignore[union-attr]
                      for key in column.portable)
CONTENT_KEYS = ("text", "image", "audio", "resource", "resource_link")
TEXT_MIME_SUFFIXES = ("+json", "+xml", "+yaml")
TEXT_MIME_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml",
                   "application/javascript", "application/toml")

Path_ = tuple[Any, ...]
# Deepest nesting of lists and mappings accepted; the format itself needs six levels.
MAX_NESTING = 32
_SURROGATE = re.compile("[\ud800-\udfff]")


class FormatError(RegistryError):
    """The file cannot be read as this format; `problems` lists each one with its place."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


# ------------------------------------------------------------------------------------------ loading
@dataclass
class Loaded:
    data: Any
    source: str  # how errors name the file
    base_dir: Path  # where `file:` paths are resolved
    lines: dict[Path_, int] = field(default_factory=dict)  # path -> 1-based line, when parsed from YAML
    problems: list[str] = field(default_factory=list)  # found while parsing (duplicate keys)
    side_files: set[Path] = field(default_factory=set)  # `file:` paths the entries named (read_entries fills it)


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int], duplicates: list[tuple[Path_, int]]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                duplicates.append((path + (key,), key_node.start_mark.line + 1))
            seen.add(key)
            lines.setdefault(path + (key,), key_node.start_mark.line + 1)
            _walk(value_node, path + (key,), lines, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value, start=1):
            _walk(item, path + (index,), lines, duplicates)


def _refuse_hostile(text: str, source: str, builder: EventBuilder | None = None) -> None:
    """Read the document as a flat stream of YAML events and refuse what would make composing it
    costly or impossible: aliases (a few hundred bytes of nested aliases expand to gigabytes, a
    self-referencing one never ends), nesting deeper than MAX_NESTING (the composer recurses once
    per level) and UTF-16 surrogates from escapes such as "\\ud800" (no database or JSON encoder
    can store them). The event parser keeps its own stack, so this pass is safe on any input;
    the first problem found is raised as FormatError naming the line. `builder` is fed libyaml's
    events as they pass (registry.portable.yamlbuild); it is left unfinished when libyaml refused the text."""
    if len(text.encode("utf-8", "surrogatepass")) > max_document_bytes():
        raise FormatError([f"{source}: the file is larger than {max_document_bytes():,} bytes."])
    if FAST_LOADER is not None:
        try:
            _scan_events(text, source, FAST_LOADER, builder)
            return
        except FormatError:
            raise
        except yaml.YAMLError:
            pass  # libyaml refused it: the pure-Python reader's pass names the problem as usual
    _scan_events(text, source, yaml.SafeLoader)


def _scan_events(text: str, source: str, loader_class: type, builder: EventBuilder | None = None) -> None:
    anchors: dict[str, int] = {}
    depth = 0
    loader = loader_class(text)
    feed = builder.feed if builder is not None else None
    try:
        while loader.check_event():
            event = loader.get_event()
            if feed is not None:
                feed(event)
            line = event.start_mark.line + 1
            if isinstance(event, yaml.AliasEvent):
                anchor = anchors.get(event.anchor)
                where = f" (its anchor &{event.anchor} is on line {anchor})" if anchor else ""
                raise FormatError([f"{source}:{line}: YAML aliases are not supported: *{event.anchor}{where}. "
                                   "Write the value out in full."])
            anchor_name = getattr(event, "anchor", None)
            if anchor_name is not None:
                anchors.setdefault(anchor_name, line)
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_NESTING:
                    raise FormatError([f"{source}:{line}: lists and mappings are nested more than "
                                       f"{MAX_NESTING} levels deep."])
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
            elif isinstance(event, yaml.ScalarEvent) and _SURROGATE.search(event.value):
                # PyYAML does not join an escaped pair (\ud83d\ude00) either, so both halves land here.
                raise FormatError([f"{source}:{line}: the text contains a UTF-16 surrogate escape (\\ud800 to "
                                   "\\udfff), which is not a character: write the character itself or its "
                                   "\\U0001F600-style escape."])
    finally:
        loader.dispose()


def _compose(text: str, loader_class: type) -> tuple[Any, Any]:
    loader = loader_class(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


def parse_yaml(text: str, source: str = "<string>", base_dir: Path | None = None) -> Loaded:
    """Parse YAML text; malformed or hostile YAML raises FormatError naming the line and column.

    Hostile documents are refused before anything is composed (`_refuse_hostile`). libyaml
    (when PyYAML has it) then reads a large file tens of times faster; a document it refuses is
    read again by the pure-Python reader, whose messages name the problem the same way whichever
    reader is installed.
    """
    builder = EventBuilder()
    try:
        _refuse_hostile(text, source, builder)
        if builder.ok and builder.finished:  # read in that one pass (registry.portable.yamlbuild)
            return _loaded(builder.data, source, base_dir, builder.lines, builder.duplicates)
        try:
            if FAST_LOADER is None:
                raise yaml.YAMLError("no libyaml")
            node, data = _compose(text, FAST_LOADER)
        except yaml.YAMLError:
            node, data = _compose(text, yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        detail = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise FormatError([f"{where}: malformed YAML: {detail}"]) from exc
    except yaml.reader.ReaderError:
        raise  # characters YAML cannot carry at all: callers word this themselves
    except yaml.YAMLError as exc:
        raise FormatError([f"{source}: malformed YAML: {exc}"]) from exc
    lines: dict[Path_, int] = {}
    duplicates: list[tuple[Path_, int]] = []
    if node is not None:
        _walk(node, (), lines, duplicates)
    return _loaded(data, source, base_dir, lines, duplicates)


def _loaded(data: Any, source: str, base_dir: Path | None, lines: dict[Path_, int],
            duplicates: list[tuple[Path_, int]]) -> Loaded:
    loaded = Loaded(data, source, base_dir or Path.cwd(), lines)
    for path, line in duplicates:
        loaded.problems.append(f"{source}:{line}: {_describe(path, data)}: the key appears twice in one mapping.")
    return loaded


def load_file(path: str | Path, source: str | None = None) -> Loaded:
    """Read and parse a YAML file; problems name it as `source` (default: the path)."""
    path = Path(path)
    source = source or str(path)
    try:
        if path.stat().st_size > max_document_bytes():
            raise FormatError([f"{source}: the file is larger than {max_document_bytes():,} bytes."])
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError([f"{source}: cannot read the file: {exc}"]) from exc
    return parse_yaml(text, source, path.resolve().parent)


YAML_SUFFIXES = (".yaml", ".yml")


def is_hidden(path: Path, root: Path) -> bool:
    """Inside a dot-folder or a dot-file below `root` (.git, editor swap files)."""
    try:
        parts = path.relative_to(root).parts
    except ValueError:
        parts = path.parts
    return any(part.startswith(".") for part in parts)


def yaml_files(folder: str | Path) -> list[Path]:
    """The YAML files of a folder and its sub-folders (hidden ones skipped), in a stable order."""
    root = Path(folder)
    return sorted(p for p in root.rglob("*")
                  if p.suffix.lower() in YAML_SUFFIXES and p.is_file() and not is_hidden(p, root))


def load_path(path: str | Path) -> list[Loaded]:
    """One YAML file, or every YAML file of a folder; raise FormatError listing every unreadable one.

    Each file keeps its own name in messages and its own folder for `file:` side files."""
    path = Path(path)
    if not path.exists():
        raise FormatError([f"{path}: no such file or folder."])
    if not path.is_dir():
        return [load_file(path)]
    files = yaml_files(path)
    if not files:
        raise FormatError([f"{path}: the folder holds no YAML file (*.yaml, *.yml)."])
    loaded: list[Loaded] = []
    problems: list[str] = []
    for file in files:
        try:
            loaded.append(load_file(file))
        except FormatError as exc:
            problems.extend(exc.problems)
    if problems:
        raise FormatError(problems)
    return loaded


# ------------------------------------------------------------------------------------------ checking
def _entry_label(section: str, index: int, data: Any) -> str:
    label = f"{section}[{index}]"
    try:
        entry = data[section][index - 1]
        key_field = KEY_FIELD[SECTIONS[section]]
        key = entry.get(key_field)
        if isinstance(key, str) and key:
            label += f" ({key_field}: {key})"
    except (TypeError, KeyError, IndexError, AttributeError):
        pass
    return label


def _field_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _describe(path: Path_, data: Any) -> str:
    if len(path) >= 2 and path[0] in SECTIONS and isinstance(path[1], int):
        head = _entry_label(path[0], path[1], data)
        rest = _field_path(path[2:])
        return f"{head}: {rest}" if rest else head
    return _field_path(path) or "top level"


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
        return f"{prefix}: {_describe(path, self.loaded.data)}"

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
                self.error(path + (key,), f"unknown key '{key}'.{suggestion}")
        return value

    def string(self, m: Mapping[str, Any], key: str, path: Path_, *, required: bool = False,
               max_length: int | None = None, check: Callable[[str], None] | None = None) -> str:
        value = m.get(key)
        if value is None:
            if required:
                self.error(path + (key,) if key in m else path, f"'{key}' is required.")
            return ""
        if not isinstance(value, str):
            self.error(path + (key,), f"expected a string, got {_type_name(value)}"
                       + (" (put it in quotes)." if isinstance(value, (int, float, bool)) else "."))
            return ""
        if required and not value.strip():
            self.error(path + (key,), f"'{key}' must not be empty.")
        if max_length is not None and len(value) > max_length:
            self.error(path + (key,), f"at most {max_length} characters (this has {len(value)}).")
        if check is not None and value:
            try:
                check(value)
            except ValidationError as exc:
                self.error(path + (key,), " ".join(exc.messages))
            except InvalidUri as exc:
                self.error(path + (key,), exc.message)
        return value

    def boolean(self, m: Mapping[str, Any], key: str, path: Path_, default: bool) -> bool:
        value = m.get(key, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(path + (key,), f"expected true or false, got {_type_name(value)}.")
            return default
        return value

    def strings(self, m: Mapping[str, Any], key: str, path: Path_, *, check: Callable[[str], None] | None = None,
                no_commas: bool = False) -> list[str]:
        value = m.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.error(path + (key,), f"expected a list, e.g. [a, b], got {_type_name(value)}.")
            return []
        out = []
        for index, item in enumerate(value, start=1):
            if not isinstance(item, str):
                self.error(path + (key, index), f"expected a string, got {_type_name(item)}.")
                continue
            if no_commas and "," in item:
                self.error(path + (key, index), "a tag cannot contain ','.")
                continue
            if check is not None:
                try:
                    check(item)
                except ValidationError as exc:
                    self.error(path + (key, index), " ".join(exc.messages))
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
            self.error(path + (key,), f"expected a list, got {_type_name(value)}.")
            return []
        return [(path + (key, index), item) for index, item in enumerate(value, start=1)]

    def placeholders(self, text: str, path: Path_) -> None:
        try:
            placeholders_in(text)
        except TemplateSyntaxError as exc:
            self.warn(path, exc.message)

    def labels(self, m: Mapping[str, Any], path: Path_) -> list[str]:
        if "labels" not in m or m["labels"] is None:
            return [PRODUCTION]
        labels = self.strings(m, "labels", path, check=label_name_validator)
        return list(dict.fromkeys(labels))

    # ---- bytes and side files
    def payload(self, m: Mapping[str, Any], path: Path_, *, mime_type: str, text_allowed: bool) -> tuple[str, bytes | None]:
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
            self._check_size(len(value.encode("utf-8")), path + ("text",))
            return value, None
        if key == "base64":
            encoded = self.string(m, "base64", path)
            try:
                raw = base64.b64decode("".join(encoded.split()), validate=True)
            except (binascii.Error, ValueError):
                self.error(path + ("base64",), "this is not valid base64.")
                return "", None
            self._check_size(len(raw), path + ("base64",))
            return "", raw or None
        raw = self._side_file(self.string(m, "file", path), path + ("file",))
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
        return target.read_bytes()


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
        c.error(path + ("type",), f"unknown type '{kind}'; use one of: {', '.join(argtypes.TYPES)}.")
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
        c.error(path + (key,), f"expected a whole number of characters (0 or more), got {value!r}.")
        return None
    return value


def _number(c: _Checker, a: Mapping[str, Any], key: str, path: Path_) -> int | float | None:
    value = a.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        c.error(path + (key,), f"expected a number, got {_type_name(value)}.")
        return None
    if isinstance(value, int) and abs(value) >= 2**53:
        c.error(path + (key,), "the number is too large.")
        return None
    return value


def _argument_default(c: _Checker, a: Mapping[str, Any], path: Path_, kind: str) -> str:
    """`default: 5` and `default: true` are fine for numbers and booleans; stored as MCP sends them."""
    value = a.get("default")
    if kind in (argtypes.INTEGER, argtypes.NUMBER) and isinstance(value, (int, float)) and not isinstance(value, bool):
        return argtypes.number_text(value)
    if kind == argtypes.BOOLEAN and isinstance(value, bool):
        return "true" if value else "false"
    return c.string(a, "default", path)


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
            c.error(arg_path + ("name",), f"the argument '{name}' is declared twice.")
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
        c.error(path + ("messages",), "a prompt needs at least one message.")
    for msg_path, raw_msg in messages:
        message = _message(c, raw_msg, msg_path)
        if message is not None:
            data["messages"].append(message)
    return data


def _message(c: _Checker, raw: Any, path: Path_) -> dict[str, Any] | None:
    m = c.mapping(raw, path, ("role",) + CONTENT_KEYS, "a message")
    if m is None:
        return None
    role = m.get("role", "user")
    if role not in ("user", "assistant"):
        c.error(path + ("role",), f"the role must be user or assistant, not {role!r}.")
    kinds = [k for k in CONTENT_KEYS if k in m]
    if len(kinds) != 1:
        c.error(path, "give exactly one of " + ", ".join(CONTENT_KEYS) + (f" (found {', '.join(kinds)})." if kinds else "."))
        return None
    kind = kinds[0]
    item: dict[str, Any] = {"role": role, "kind": kind}
    if kind == "text":
        item["text"] = c.string(m, "text", path)  # an empty text is a publish-time problem, as in the admin
        c.placeholders(item["text"], path + ("text",))
        return item
    body_path = path + (kind,)
    if kind in ("image", "audio"):
        b = c.mapping(m[kind], body_path, ("mime_type", "base64", "file"), f"{kind}: {{mime_type, base64 | file}}")
        if b is None:
            return None
        mime = c.string(b, "mime_type", body_path, required=True, max_length=100)
        if mime and not mime.startswith(kind + "/"):
            c.error(body_path + ("mime_type",), f"an {kind} needs a {kind}/... MIME type, e.g. "
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
        c.placeholders(item["uri"], body_path + ("uri",))
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
    c.placeholders(item["uri"], body_path + ("uri",))
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
        c.spec.references.append((item["resource_uri"], c.where(path + ("from",))))
    return item


def _described(c: _Checker, m: Mapping[str, Any], path: Path_) -> dict[str, Any]:
    """Fields resources and templates share."""
    audience = m.get("audience")
    if isinstance(audience, str):
        audience = [audience]
    chosen: list[str] = []
    if audience is not None:
        if not isinstance(audience, list) or any(a not in ("user", "assistant") for a in audience):
            c.error(path + ("audience",), "the audience is a list of user and/or assistant, e.g. [user].")
        else:
            chosen = [a for a in ("user", "assistant") if a in audience]
    priority = m.get("priority")
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, (int, float)) or not 0 <= priority <= 1:
            c.error(path + ("priority",), "the priority is a number from 0 to 1.")
            priority = None
        else:
            priority = float(priority)
    return {
        "name": c.string(m, "name", path, required=True, max_length=200),
        "title": c.string(m, "title", path, max_length=200),
        "description": c.string(m, "description", path),
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
    c.placeholders(data["body"], path + ("body",))
    seen: set[str] = set()
    for var_path, raw_var in c.items(m, "variables", path):
        v = c.mapping(raw_var, var_path, VARIABLE_KEYS, "a variable")
        if v is None:
            continue
        name = c.string(v, "name", var_path, required=True, max_length=64)
        if name in seen:
            c.error(var_path + ("name",), f"the variable '{name}' is listed twice.")
        seen.add(name)
        data["variables"].append({"name": name, "description": c.string(v, "description", var_path),
                                  "suggestions": c.strings(v, "suggestions", var_path)})
    data["variables"].sort(key=lambda v: v["name"])  # stored (and exported) by name
    return data


READERS = {"prompt": _prompt, "resource": _resource, "template": _template}


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
                c.error(path + ("released",), "expected a mapping of label to version (export writes it; import ignores it).")
            if spec.key in seen:
                c.error(path + (KEY_FIELD[kind],), f"already defined by {section}[{seen[spec.key]}].")
            seen.setdefault(spec.key, index)
            specs.append(spec)
    if c.problems:
        raise FormatError(c.problems)
    return specs


# ------------------------------------------------------------------------------------------ dumping
def _b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value not in ("", None, [], {}):
        out[key] = value


def _audience_list(value: str) -> list[str]:
    return [a for a in (value or "").split(",") if a]


def _message_document(message: Mapping[str, Any]) -> dict[str, Any]:
    kind = message["kind"]
    out: dict[str, Any] = {"role": message["role"]}
    if kind == "text":
        out["text"] = message.get("text", "")
    elif kind in ("image", "audio"):
        out[kind] = {"mime_type": message.get("mime_type", ""), "base64": _b64(message.get("data"))}
    elif message.get("resource_uri"):
        body = {"from": message["resource_uri"]}
        if kind == "resource_link":
            _put(body, "name", message.get("link_name"))
        out[kind] = body
    elif kind == "resource":
        body = {"uri": message.get("uri", "")}
        _put(body, "mime_type", message.get("mime_type"))
        if message.get("data"):
            body["base64"] = _b64(message["data"])
        else:
            body["text"] = message.get("text", "")
        out[kind] = body
    else:
        body = {"uri": message.get("uri", "")}
        _put(body, "name", message.get("link_name"))
        _put(body, "mime_type", message.get("mime_type"))
        out[kind] = body
    return out


def entry_document(kind: str, data: Mapping[str, Any], *, labels: list[str] | None = None,
                   released: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Draft data -> this format (empty optional fields left out). `labels` None: not written."""
    out: dict[str, Any] = {}
    if kind == "prompt":
        out["name"] = data["name"]
        for key in ("title", "description", "tags"):
            _put(out, key, data.get(key))
        arguments = []
        for arg in data.get("arguments", []):
            item: dict[str, Any] = {"name": arg["name"]}
            for key in ("title", "description"):
                _put(item, key, arg.get(key))
            item["required"] = bool(arg.get("required"))
            for key in ("default", "suggestions"):
                _put(item, key, arg.get(key))
            if (arg.get("type") or argtypes.TEXT) != argtypes.TEXT:
                item["type"] = arg["type"]
            for key, doc_key in (("choices", "choices"), ("min_length", "min_length"), ("max_length", "max_length"),
                                 ("pattern", "pattern"), ("minimum", "min"), ("maximum", "max")):
                _put(item, doc_key, arg.get(key))
            arguments.append(item)
        _put(out, "arguments", arguments)
        out["messages"] = [_message_document(m) for m in data.get("messages", [])]
    else:
        key_field = KEY_FIELD[kind]
        out[key_field] = data[key_field]
        for key in ("name", "title", "description", "mime_type", "tags"):
            _put(out, key, data.get(key))
        _put(out, "audience", _audience_list(data.get("audience", "")))
        _put(out, "priority", data.get("priority"))
        if kind == "resource":
            if data.get("data"):
                out["base64"] = _b64(data["data"])
            else:
                out["text"] = data.get("text", "")
        else:
            out["body"] = data.get("body", "")
            variables = []
            for variable in data.get("variables", []):
                item = {"name": variable["name"]}
                _put(item, "description", variable.get("description"))
                _put(item, "suggestions", variable.get("suggestions"))
                variables.append(item)
            _put(out, "variables", variables)
    if labels is not None:
        out["labels"] = list(labels)
    if released:
        out["released"] = dict(released)
    return out


class _Dumper(yaml.SafeDumper):
    """The pure-Python writer."""


# libyaml's writer (when PyYAML was built with it): about seven times faster. Both writers lay a
# document out alike (list items at their key's indentation), except that libyaml escapes some
# characters the Python one prints (astral-plane characters such as emoji become \U0001F600).
FAST_DUMPER: type | None = getattr(yaml, "CSafeDumper", None)
# Characters both writers print the same way; an entry with any other is written by the Python one.
_FAST_UNSAFE = re.compile("[^\t\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd]")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\x85" in value:  # NEL is a YAML line break: plain, single-quoted or block, it reads back as " " or "\n"
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    short = all(isinstance(v, str) and "\n" not in v for v in value) and sum(len(v) + 2 for v in value) < 70
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=bool(value) and short)


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_WRITERS: list[type] = [_Dumper]
if FAST_DUMPER is not None:
    class _FastDumper(FAST_DUMPER):  # type: ignore[misc, valid-type]
        """libyaml's writer with the same representers, the common types turned into nodes directly.

        Strings, lists and mappings make the nodes `_represent_str`, `_represent_list` and
        SafeRepresenter (with default_flow_style=False) make, without the per-object
        representer lookup and alias bookkeeping (the format has no aliases: import refuses them).
        """

        def represent_data(self, data: Any) -> yaml.Node:
            kind = type(data)
            if kind is str:
                return yaml.ScalarNode(_STR, data, style="|" if "\n" in data else None)
            if kind is dict:
                return yaml.MappingNode(_MAP, [(self.represent_data(k), self.represent_data(v))
                                               for k, v in data.items()], flow_style=False)
            if kind is list:
                short = all(type(v) is str and "\n" not in v for v in data) and sum(len(v) + 2 for v in data) < 70
                return yaml.SequenceNode(_SEQ, [self.represent_data(v) for v in data],
                                         flow_style=bool(data) and short)
            return super().represent_data(data)

    _WRITERS.append(_FastDumper)
for _writer in _WRITERS:
    _writer.add_representer(str, _represent_str)
    _writer.add_representer(list, _represent_list)


def _dump(data: Any, dumper: type) -> str:
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


def _fast_safe(value: Any) -> bool:
    """Whether libyaml writes `value` exactly as the pure-Python writer does."""
    if isinstance(value, str):
        return _FAST_UNSAFE.search(value) is None
    if isinstance(value, dict):
        return all(_fast_safe(k) and _fast_safe(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_fast_safe(v) for v in value)
    return True


def dump_document(document: Mapping[str, list[dict[str, Any]]], header: str = "") -> str:
    """The document as YAML; loading the result gives back exactly `document`.

    The text is the pure-Python writer's whichever writer runs: libyaml's (if PyYAML has it)
    writes each run of entries in one go, and an entry holding a character it would escape
    (an emoji) is written by the Python writer. A block list in a block mapping starts at its
    key's indentation, so a section is its key line followed by its list written on its own.
    """
    if not document:
        return header
    fast = _WRITERS[-1] if FAST_DUMPER is not None else None
    if fast is None:
        return header + _dump(dict(document), _Dumper)
    parts = [header]
    for section, items in document.items():
        if not items or section not in SECTIONS:  # only the format's own plain keys are written by hand
            parts.append(_dump({section: items}, _Dumper))
            continue
        parts.append(f"{section}:\n")
        run: list[Any] = []
        for item in items:
            if _fast_safe(item):
                run.append(item)
                continue
            if run:
                parts.append(_dump(run, fast))
                run = []
            parts.append(_dump([item], _Dumper))
        if run:
            parts.append(_dump(run, fast))
    return "".join(parts)
