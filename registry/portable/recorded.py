"""Files an import has read before, recalled by the digest of their bytes instead of parsed again.

Once entries cost a digest compare (registry.portable.unchanged), parsing and checking the YAML is
most of an unchanged re-import (the CI "import on every push"). So an import notes, for each file
it parsed, the entries that file gave (kind, key, stored key, digest, labels) and the digests of its
side files (registry.models.ImportedFile, one row per file path). A later import of the file with
the same bytes, with the same side files, whose every entry is still recorded unchanged on its row, takes
those entries as they are: nothing is parsed, and each is reported unchanged. Anything else (a new
or edited file, a side file changed, one entry saved elsewhere or never recorded, an entry defined
twice across the files) parses the file as before, so every outcome and message is the same.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path

from registry.models import ImportedFile
from registry.portable.check import EntrySpec
from registry.portable.unchanged import spec_digest, unchanged


@dataclass
class Noted:
    """An entry as a recalled file gives it (what the importer needs of an unchanged one)."""

    kind: str
    key: str
    stored: str
    digest: str
    labels: list[str]


@dataclass
class Recalled:
    path: Path
    digest: str
    entries: list[Noted]
    side_files: frozenset[Path]


def digest_of(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def recall(files: list[Path], *, publish: bool) -> dict[Path, Recalled]:
    """The files among `files` whose recorded entries are all still unchanged, with those entries."""
    found: dict[Path, Recalled] = {}
    for path in files:
        digest = digest_of(path)
        if digest is None:
            continue
        row = ImportedFile.objects.filter(path=str(path.resolve())).first()
        if row is None or row.digest != digest or any(
                digest_of(Path(side)) != seen for side, seen in row.side_files.items()):
            continue
        found[path] = Recalled(path, digest, [Noted(*entry) for entry in row.entries],
                               frozenset(Path(side) for side in row.side_files))
    by_kind: dict[str, list[tuple[str, str, list[str]]]] = {}
    for recalled in found.values():
        for entry in recalled.entries:
            by_kind.setdefault(entry.kind, []).append((entry.stored, entry.digest, entry.labels))
    settled = {kind: unchanged(kind, noted, publish=publish) for kind, noted in by_kind.items()}
    keys = [(e.kind, e.stored) for recalled in found.values() for e in recalled.entries]
    if len(keys) != len(set(keys)):
        return {}  # an entry in two files: parse them all, so the refusal names both places
    return {path: recalled for path, recalled in found.items()
            if all(e.stored in settled.get(e.kind, ()) for e in recalled.entries)}


def remember(path: Path, digest: str, specs: list[EntrySpec], side_digests: dict[Path, str],
             stored: list[str]) -> None:
    """Note what the bytes of `path` with `digest` gave, for `recall` (inside the import's
    transaction: a refused import notes nothing). `side_digests`: of the side files' bytes as they
    were read (Loaded.side_digests); `stored`: each spec's stored key."""
    entries = [[s.kind, s.key, key, spec_digest(s), list(s.labels)] for s, key in zip(specs, stored, strict=True)]
    sides = {str(side): side_digests[side] for side in sorted(side_digests)}
    ImportedFile.objects.update_or_create(path=str(path.resolve()),
                                          defaults={"digest": digest, "entries": entries, "side_files": sides})
