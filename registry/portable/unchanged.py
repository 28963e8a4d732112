"""Telling unchanged entries apart cheaply, so a re-import of the same files does no per-entry work.

Comparing a file's entry with its draft needs the draft read with its child rows, turned into data
and validated: about a millisecond per entry, most of an unchanged re-import. Instead each import
leaves on the entry row the digest of the data it found (or made) the draft equal to, and the
draft `revision` it saw then (`import_digest`, `import_revision`; and `import_version`, the newest
version's pk, when the draft equalled it). Every other save of a draft bumps `revision`
(VersionedEntry.save, the bulk writer), so while the revision is still the recorded one the draft
is still what the digest says: an entry whose digest and revision match is unchanged, and one
query per few hundred keys tells. With `publish`, it must also still equal its newest version and
every label the file names must point at that version (two more bulk queries).

Only self-contained entries are recorded: an entry whose outcome had warnings, whose data names
other registry resources (message links, `from:`, resource-typed arguments, snippet references
`{{> name }}` in any text, all of which the full path checks against the registry again), or that
is archived, always takes the full path. Only an
entry the full path compared equal is recorded (one it just wrote is compared on the next import),
and a data migration that rewrites drafts must clear `import_digest` (or bump `_FORMAT`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from django.db import connection

from registry.formats.references import OPENING
from registry.kinds import KINDS
from registry.models import VersionedEntry
from registry.portable.check import EntrySpec

_FORMAT = 1  # bump when `drafts.normalised` or the draft data change shape: every recorded digest is then stale
_CHUNK = 500  # keys per IN (...) query


def _plain(value: Any) -> Any:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return "sha256:" + hashlib.sha256(bytes(value)).hexdigest()
    return str(value)


def spec_digest(spec: EntrySpec) -> str:
    """SHA-256 of the entry's data as the file gives it; computed once per parsed entry.

    The same data always makes the same draft (drafts.normalised is a function of it), so the
    data itself is hashed, not its normalised form."""
    cached = spec.__dict__.get("_digest")
    if cached is None:
        text = json.dumps([_FORMAT, spec.kind, spec.data], sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False, default=_plain)
        cached = spec.__dict__["_digest"] = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    return cached


def _opens_reference(value: Any) -> bool:
    """Whether any text in `value` (the file's data, nested) opens a snippet reference."""
    if isinstance(value, str):
        return OPENING in value
    if isinstance(value, dict):
        return any(_opens_reference(v) for v in value.values())
    if isinstance(value, list):
        return any(_opens_reference(v) for v in value)
    return False


def self_contained(spec: EntrySpec) -> bool:
    """Whether the entry's comparison depends on nothing but its own draft (module docstring)."""
    if spec.references or spec.warnings or _opens_reference(spec.data):
        return False
    data = spec.data
    if spec.kind == "prompt":
        if any(m.get("resource_uri") for m in data.get("messages") or ()):
            return False
        if any((a.get("type") or "text") == "resource" for a in data.get("arguments") or ()):
            return False
    return True


def unchanged_keys(kind: str, specs: list[EntrySpec], keys: list[str], *, publish: bool) -> set[str]:
    """The stored keys among `keys` (those of `specs`, in order) whose entry is known unchanged."""
    return unchanged(kind, [(key, spec_digest(s), s.labels) for key, s in zip(keys, specs, strict=True)
                            if self_contained(s)], publish=publish)


def unchanged(kind: str, noted: list[tuple[str, str, list[str]]], *, publish: bool) -> set[str]:
    """The stored keys among `noted` ((stored key, digest, labels) each) whose entry is known unchanged."""
    spec = KINDS[kind]
    candidates = {key: (digest, labels) for key, digest, labels in noted}
    found: dict[str, tuple[int, int | None]] = {}  # key -> (pk, import_version)
    wanted = list(candidates)
    for start in range(0, len(wanted), _CHUNK):
        rows = spec.entry_model.objects.filter(**{f"{spec.key_field}__in": wanted[start:start + _CHUNK]}).values_list(
            spec.key_field, "pk", "revision", "import_revision", "import_digest", "import_version", "archived_at")
        for key, pk, revision, import_revision, digest, version, archived_at in rows:
            if (archived_at is None and import_revision == revision and digest
                    and digest == candidates[key][0] and (version is not None or not publish)):
                found[key] = (pk, version)
    if not publish or not found:
        return set(found)
    ids = [pk for pk, _version in found.values()]
    newest: dict[int, int] = {}
    pointing: dict[int, dict[str, int]] = {}
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start:start + _CHUNK]
        for entry_id, pk in (spec.version_model.objects.filter(entry_id__in=chunk)
                             .order_by("entry_id", "-number").values_list("entry_id", "pk")):
            newest.setdefault(entry_id, pk)
        for entry_id, name, version_id in (spec.label_model.objects.filter(entry_id__in=chunk)
                                           .values_list("entry_id", "name", "version_id")):
            pointing.setdefault(entry_id, {})[name] = version_id
    return {key for key, (pk, version) in found.items()
            if newest.get(pk) == version
            and all(pointing.get(pk, {}).get(label) == version for label in candidates[key][1])}


def record(kind: str, seen: Iterable[tuple[EntrySpec, VersionedEntry, bool]], *, publish: bool) -> None:
    """Note on each entry the digest of the data its draft now equals, at the revision seen.

    `seen`: (spec, entry, clean) for the entries the full path compared or wrote in this
    transaction; `entry.revision` is the revision it read or wrote, so a save by anyone else since
    leaves the record stale rather than wrong. With `publish`, the newest version's pk is noted too
    (the full path just made the draft equal it). Runs inside the import's transaction: a refused
    import records nothing."""
    model = KINDS[kind].entry_model
    wanted: list[tuple[VersionedEntry, str, int | None]] = []
    for spec, entry, clean in seen:
        if entry.pk is not None:
            ok = clean and self_contained(spec) and entry.archived_at is None
            wanted.append((entry, spec_digest(spec) if ok else "", entry.revision if ok else None))
    newest: dict[int, int] = {}
    if publish:
        version_model = KINDS[kind].version_model
        ids = [entry.pk for entry, digest, _revision in wanted if digest]
        for start in range(0, len(ids), _CHUNK):
            for entry_id, pk in (version_model.objects.filter(entry_id__in=ids[start:start + _CHUNK])
                                 .order_by("entry_id", "-number").values_list("entry_id", "pk")):
                newest.setdefault(entry_id, pk)
    rows = []
    for entry, digest, revision in wanted:
        version = newest.get(entry.pk) if digest else None
        if (entry.import_digest, entry.import_revision, entry.import_version) != (digest, revision, version):
            entry.import_digest, entry.import_revision, entry.import_version = digest, revision, version
            rows.append(entry)  # an entry recorded as it already is costs no write
    if rows:  # not served fields, no draft change: no signals, no revision bump; one statement, many rows
        # (bulk_update's CASE per batch costs about as much as the comparison this spares)
        quote = connection.ops.quote_name
        sql = (f"UPDATE {quote(model._meta.db_table)} SET {quote('import_digest')} = %s, "
               f"{quote('import_revision')} = %s, {quote('import_version')} = %s "
               f"WHERE {quote(model._meta.pk.column)} = %s")
        with connection.cursor() as cursor:
            cursor.executemany(sql, [(e.import_digest, e.import_revision, e.import_version, e.pk) for e in rows])
