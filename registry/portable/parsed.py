"""The watcher's memory between rounds: each watched file's parsed entries, by the digest of its bytes.

Parsing and checking a file costs more than everything else an unchanged re-import does, so a round
parses only the YAML files whose bytes (or whose `file:` side files' bytes) changed since they were
last parsed, or that the file events named, and keeps the entries of the others. The set of files
is listed afresh each round, so a deleted file's entries drop out of the round exactly as they
would from a fresh import of the folder (the importer never removes entries a file no longer
lists). Entries are then compared with the registry by their digests (registry.portable.unchanged):
an unchanged entry costs a hash compare, a changed one (or one that depends on a changed side file,
whose text is part of its data) is imported.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from registry.portable.check import EntrySpec, read_entries
from registry.portable.format import FormatError
from registry.portable.parse import load_file, yaml_files


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except OSError:
        return None  # gone or unreadable: parsing it again says which


def _digest(path: Path) -> str | None:
    raw = _read(path)
    return hashlib.sha256(raw).hexdigest() if raw is not None else None


@dataclass
class _File:
    digest: str | None
    side: dict[Path, str | None]  # each side file the entries named -> the digest of its bytes
    specs: list[EntrySpec]


class ParsedFiles:
    """Parsed entries per YAML file, reused while the file and its side files are byte-for-byte the same."""

    def __init__(self) -> None:
        self.files: dict[Path, _File] = {}
        self.parsed = 0  # files parsed by the last `read` (for logs and tests)
        self.label = ""  # how the last `read` names its source, as import_documents would
        self.side_files: frozenset[Path] = frozenset()  # the side files the last `read` found named

    def read(self, path: Path, changed: Iterable[Path] = ()) -> tuple[list[EntrySpec], frozenset[Path]]:
        """Every entry of the file or folder at `path`, and the side files they name.

        `changed`: paths the file events named, parsed again whatever their digest (an edit made
        while a file was being read is then never mistaken for the state already parsed).
        Raises FormatError listing every problem, as `load_path` and `read_entries` do."""
        forced = {Path(p).resolve() for p in changed}
        if not path.exists():
            raise FormatError([f"{path}: no such file or folder."])
        files = yaml_files(path) if path.is_dir() else [path]
        if path.is_dir() and not files:
            raise FormatError([f"{path}: the folder holds no YAML file (*.yaml, *.yml)."])
        specs: list[EntrySpec] = []
        side_files: set[Path] = set()
        problems: list[str] = []
        kept: dict[Path, _File] = {}
        self.parsed = 0
        self.label = str(files[0]) if len(files) == 1 else str(path)
        for file in files:
            key = file.resolve()
            raw = _read(file)
            digest = hashlib.sha256(raw).hexdigest() if raw is not None else None
            cached = self.files.get(key)
            if (cached is None or cached.digest != digest or key in forced
                    or any(side in forced or _digest(side) != seen for side, seen in cached.side.items())):
                cached = None
                self.parsed += 1
                try:
                    loaded = load_file(file, raw=raw)  # the bytes hashed are the bytes parsed
                except FormatError as exc:
                    problems.extend(exc.problems)
                    continue
                try:
                    entries = read_entries(loaded)
                except FormatError as exc:
                    problems.extend(exc.problems)
                    side_files |= loaded.side_files  # kept watched, so fixing one starts a round
                    continue
                cached = _File(digest, {side: loaded.side_digests.get(side) for side in loaded.side_files}, entries)
            kept[key] = cached
            specs.extend(cached.specs)
            side_files |= cached.side.keys()
        self.files = kept  # files no longer listed are forgotten
        self.side_files = frozenset(side_files)
        if problems:
            raise FormatError(problems)
        return specs, self.side_files

