"""Reading prompts-as-code YAML: one file, a folder of files or a string, with every value's line.

Hostile documents (aliases, deep nesting, huge scalars, surrogates) are refused while the events
are read, before anything is built (registry/portable/yamlbuild.py builds the document and its
line numbers from the same pass). The format itself is described in registry/portable/format.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from registry.conf import max_document_bytes
from registry.portable.format import FAST_LOADER, MAX_NESTING, SURROGATE, FormatError, Path_, describe
from registry.portable.yamlbuild import EventBuilder


# ------------------------------------------------------------------------------------------ loading
@dataclass
class Loaded:
    data: Any
    source: str  # how errors name the file
    base_dir: Path  # where `file:` paths are resolved
    lines: dict[Path_, int] = field(default_factory=dict)  # path -> 1-based line, when parsed from YAML
    problems: list[str] = field(default_factory=list)  # found while parsing (duplicate keys)
    side_files: set[Path] = field(default_factory=set)  # `file:` paths the entries named (read_entries fills it)
    side_digests: dict[Path, str] = field(default_factory=dict)  # side file -> SHA-256 of the bytes read


def _walk(node: yaml.Node, path: Path_, lines: dict[Path_, int], duplicates: list[tuple[Path_, int]]) -> None:
    lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for key_node, value_node in node.value:
            key = key_node.value
            if key in seen:
                duplicates.append(((*path, key), key_node.start_mark.line + 1))
            seen.add(key)
            lines.setdefault((*path, key), key_node.start_mark.line + 1)
            _walk(value_node, (*path, key), lines, duplicates)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value, start=1):
            _walk(item, (*path, index), lines, duplicates)


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
                anchor = anchors.get(event.anchor or "")
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
            elif isinstance(event, yaml.ScalarEvent) and SURROGATE.search(event.value):
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
        loaded.problems.append(f"{source}:{line}: {describe(path, data)}: the key appears twice in one mapping.")
    return loaded


def load_file(path: str | Path, source: str | None = None, raw: bytes | None = None) -> Loaded:
    """Read and parse a YAML file; problems name it as `source` (default: the path).

    `raw`: the file's bytes, already read (the importer hashes what it parses)."""
    path = Path(path)
    source = source or str(path)
    try:
        if (len(raw) if raw is not None else path.stat().st_size) > max_document_bytes():
            raise FormatError([f"{source}: the file is larger than {max_document_bytes():,} bytes."])
        if raw is None:
            raw = path.read_bytes()
        text = raw.decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text's universal newlines
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
