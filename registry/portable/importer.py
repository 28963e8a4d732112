"""Prompts as code: import a YAML file (or a folder of them) into the registry, and export the registry's drafts.

`import_documents` makes each listed entry's draft what the files say, in ONE transaction
(any error: nothing is saved), and with `publish=True` publishes drafts that differ from
their newest version and points the entry's labels at it. Re-importing the same file writes
nothing: no drafts, versions, label moves or audit rows. The format is in `registry.portable.format`.

Protected labels (services module docstring) hold here too: an import by a user (the REST
API) that would move `production` fails with ApprovalRequired for that entry, and nothing is
saved, unless `override_reason` is given by a user with the override permission. The intended
CI flow is: import drafts (no --publish), then request publication and have it approved. The
management command runs as the operator (acting_user=None): an automatic, audited override.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from django.db.models import Max, Prefetch

from registry import roles
from registry.audit import User
from registry.authoring.drafts import draft_data, normalised, save_draft
from registry.authoring.snapshots import content_hash, snapshot_of
from registry.authoring.validation import validate_entry
from registry.changes import recording
from registry.errors import RegistryError
from registry.formats.uris import normalize_uri, normalize_uri_template
from registry.kinds import KINDS
from registry.models import PromptMessage, Resource, Snippet, VersionedEntry
from registry.portable.bulk import BulkWriter
from registry.portable.check import EntrySpec, read_entries
from registry.portable.dump import dump_document, entry_document
from registry.portable.format import SECTIONS, FormatError
from registry.portable.parse import Loaded, load_file, load_path, yaml_files
from registry.portable.recorded import Noted, recall, remember
from registry.portable.snippet_order import Circle, circled, circles, included_first
from registry.portable.unchanged import record, unchanged_keys
from registry.refusals import record_refusal
from registry.release import services

ACTOR = "registry_import"
# Snippets first (every kind may include them), then resources: prompts may embed or link them.
ORDER = ("snippet", "resource", "template", "prompt")
PLURAL = {kind: section for section, kind in SECTIONS.items()}


class ImportFailed(RegistryError):
    """The import was refused and rolled back; `problems` names file, entry and field for each."""

    def __init__(self, problems: list[str], side_files: frozenset[Path] = frozenset()) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems
        self.side_files = side_files  # the `file:` paths named by the files read, as far as they were read


@dataclass
class EntryOutcome:
    kind: str
    key: str
    status: str  # created, updated, unchanged
    changes: list[dict[str, Any]] = field(default_factory=list)  # [{field, before, after}]
    published: int | None = None  # the version number made by this import
    labels_moved: list[str] = field(default_factory=list)  # labels pointed at an existing version
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.status != "unchanged" or self.published is not None or bool(self.labels_moved)


@dataclass
class ImportReport:
    source: str
    dry_run: bool
    publish: bool
    outcomes: list[EntryOutcome] = field(default_factory=list)
    side_files: frozenset[Path] = frozenset()  # the `file:` paths the imported files named

    def counts(self, kind: str) -> Counter[str]:
        return Counter(o.status for o in self.outcomes if o.kind == kind)

    @property
    def published(self) -> int:
        return sum(1 for o in self.outcomes if o.published is not None)

    @property
    def labels_moved(self) -> int:
        return sum(len(o.labels_moved) for o in self.outcomes)

    @property
    def changed(self) -> bool:
        return any(o.changed for o in self.outcomes)

    def summary(self) -> str:
        """e.g. 'prompts: 2 created, 1 updated, 5 unchanged; published 3'."""
        parts = []
        for kind in ("snippet", "prompt", "resource", "template"):
            counts = self.counts(kind)
            if counts:
                parts.append(f"{PLURAL[kind]}: " + ", ".join(
                    f"{counts[s]} {s}" for s in ("created", "updated", "unchanged") if counts[s]))
        text = "; ".join(parts) or "nothing to import"
        if self.publish:
            text += f"; published {self.published}"
            if self.labels_moved:
                text += f"; moved {self.labels_moved} label(s)"
        if self.dry_run:
            text += " (dry run: nothing saved)"
        return text


class _DryRun(Exception):
    def __init__(self, report: ImportReport) -> None:
        self.report = report


def _load(path_or_data: str | Path | Mapping[str, Any], source: str | None, base_dir: Path | None) -> list[Loaded]:
    if isinstance(path_or_data, (str, Path)):
        if source and Path(path_or_data).is_file():  # errors name the file as the caller calls it
            return [load_file(path_or_data, source)]
        return load_path(path_or_data)
    return [Loaded(dict(path_or_data), source or "<data>", base_dir or Path.cwd())]


def _read_all(documents: list[Loaded]) -> list[EntrySpec]:
    """Every file's entries; each entry may be defined once across all files (FormatError otherwise)."""
    specs: list[EntrySpec] = []
    problems: list[str] = []
    for loaded in documents:
        try:
            specs.extend(read_entries(loaded))
        except FormatError as exc:
            problems.extend(exc.problems)
    check_unique(specs, problems)
    return specs


def check_unique(specs: list[EntrySpec], problems: list[str] | None = None) -> None:
    """Raise FormatError with `problems` and one for each entry defined a second time across the files."""
    problems = list(problems or ())
    first: dict[tuple[str, str], EntrySpec] = {}
    for spec in specs:  # by the stored key: 'docs://Guide/x' and 'docs://guide/x' are one resource
        seen = first.setdefault((spec.kind, stored_key(spec.kind, spec.key)), spec)
        if seen is not spec:
            problems.append(f"{spec.location}: already defined by {seen.location}; define each entry in one file.")
    if problems:
        raise FormatError(problems)


def import_documents(
    path_or_data: str | Path | Mapping[str, Any],
    *,
    publish: bool = False,
    note: str = "",
    dry_run: bool = False,
    acting_user: User = None,
    source: str | None = None,
    base_dir: Path | None = None,
    override_reason: str | None = None,
    bulk: bool = True,
) -> ImportReport:
    """Import a prompts-as-code file (a path, or already-parsed data with `base_dir` for side files).

    Raises ImportFailed, listing every problem, when anything is wrong; then nothing is saved.
    With `dry_run` everything runs (including publishing) inside a transaction that is rolled back.
    `bulk=False` saves and publishes every entry through the services one at a time: the
    reference the bulk writer (registry.portable.bulk) is tested against, and otherwise no different.
    """
    note = (note or "").strip()
    if publish and not note:
        raise ImportFailed(["A change note is required to publish: say what changed and why."])
    if isinstance(path_or_data, (str, Path)) and bulk:
        files = _import_files(Path(path_or_data), source, publish=publish)
        if files is not None:
            items, label, side_files, after = files
            return import_specs(items, label=label, side_files=side_files, publish=publish, note=note,
                                dry_run=dry_run, acting_user=acting_user, override_reason=override_reason,
                                after=after)
    try:
        documents = _load(path_or_data, source, base_dir)
    except FormatError as exc:
        raise ImportFailed(exc.problems) from exc
    try:
        specs = _read_all(documents)
    except FormatError as exc:
        raise ImportFailed(exc.problems, frozenset().union(*(d.side_files for d in documents))) from exc
    side_files = frozenset().union(*(d.side_files for d in documents))
    label = documents[0].source if len(documents) == 1 else (source or str(path_or_data))
    return import_specs(specs, label=label, side_files=side_files, publish=publish, note=note, dry_run=dry_run,
                        acting_user=acting_user, override_reason=override_reason, bulk=bulk)


def _import_files(path: Path, source: str | None, *, publish: bool,
                  ) -> tuple[list[EntrySpec | Noted], str, frozenset[Path], Callable[[], None]] | None:
    """The entries of the file or folder at `path`, recalled where the bytes were imported before
    (registry.portable.recorded) and parsed elsewhere; and what notes the parsed files once imported.
    None when the files must all be parsed after all (an entry defined twice: the refusal names both)."""
    if not path.exists():
        raise ImportFailed([f"{path}: no such file or folder."])
    files = yaml_files(path) if path.is_dir() else [path]
    if not files:
        raise ImportFailed([f"{path}: the folder holds no YAML file (*.yaml, *.yml)."])
    recalled = recall(files, publish=publish)
    problems: list[str] = []
    parsed: dict[Path, tuple[str | None, Loaded]] = {}
    for file in files:
        if file not in recalled:
            try:
                raw: bytes | None = file.read_bytes()
            except OSError:
                raw = None  # load_file says why
            try:
                loaded = load_file(file, source if file == path else None, raw=raw)
            except FormatError as exc:
                problems.extend(exc.problems)
                continue
            parsed[file] = (hashlib.sha256(raw).hexdigest() if raw is not None else None, loaded)
    if problems:
        raise ImportFailed(problems)
    items: list[EntrySpec | Noted] = []
    of_file: dict[Path, list[EntrySpec]] = {}
    for file in files:
        if file in recalled:
            items.extend(recalled[file].entries)
        else:
            try:
                of_file[file] = read_entries(parsed[file][1])
            except FormatError as exc:
                problems.extend(exc.problems)
                continue
            items.extend(of_file[file])
    side_files = frozenset().union(*(loaded.side_files for _digest, loaded in parsed.values()),
                                   *(r.side_files for r in recalled.values()))
    if problems:
        raise ImportFailed(problems, side_files)
    recalled_keys = {(e.kind, e.stored) for r in recalled.values() for e in r.entries}
    specs = [item for item in items if isinstance(item, EntrySpec)]
    if recalled_keys and any((s.kind, stored_key(s.kind, s.key)) in recalled_keys for s in specs):
        return None
    try:
        check_unique(specs)
    except FormatError as exc:
        raise ImportFailed(exc.problems, side_files) from exc

    def after() -> None:
        for file, entries in of_file.items():
            digest, loaded = parsed[file]
            if digest is not None:
                remember(file, digest, entries, loaded.side_digests, [stored_key(s.kind, s.key) for s in entries])

    one_of_folder = path.is_dir() and len(files) == 1  # named as import_documents names what it read
    label = str(files[0]) if one_of_folder else (source or str(path))
    return items, label, side_files, after


def import_specs(specs: Sequence[EntrySpec | Noted], *, label: str, side_files: frozenset[Path] = frozenset(),
                 publish: bool = False, note: str = "", dry_run: bool = False, acting_user: User = None,
                 override_reason: str | None = None, bulk: bool = True,
                 after: Callable[[], None] | None = None) -> ImportReport:
    """Import entries already read and checked (`check_unique`): what `import_documents` does once
    the files are parsed. The watcher (registry.portable.parsed) calls it with the entries it kept
    from files whose bytes did not change. A `Noted` entry (registry.portable.recorded) is known
    unchanged. `after` runs in the import's transaction once everything is written."""
    note = (note or "").strip()
    if publish and not note:
        raise ImportFailed(["A change note is required to publish: say what changed and why."])
    report = ImportReport(label, dry_run, publish, side_files=side_files)
    refused: list[Any] = []  # refusals by ownership, role or review rule, audited once the import has rolled back
    try:
        with recording(durable=True):  # one announcement for the whole import, after commit
            problems: list[str] = []
            for kind in ORDER:
                kind_items = [s for s in specs if s.kind == kind]
                in_circle: dict[str, Circle] = {}
                if kind == "snippet":
                    kind_items = included_first(kind_items)
                    in_circle = circles(kind_items)
                # Snippets are few and short: imported one by one through the services (no bulk writer).
                batched = bulk and kind != "snippet"
                kind_specs = [s for s in kind_items if isinstance(s, EntrySpec)]
                keys = [stored_key(kind, s.key) for s in kind_specs]
                # Entries known unchanged (registry.portable.unchanged) cost a digest compare, nothing more.
                settled = unchanged_keys(kind, kind_specs, keys, publish=publish) if batched else set()
                todo = [s for s, key in zip(kind_specs, keys, strict=True) if key not in settled]
                known = _Known.read(kind, todo, lock=batched)  # after the kinds before it were imported
                writer = _writer(kind, todo, known, publish=publish, note=note, acting_user=acting_user,
                                 override_reason=override_reason) if batched else None
                seen: list[tuple[EntrySpec, VersionedEntry, bool]] | None = [] if batched else None
                stored = iter(keys)
                for spec in kind_items:
                    if not isinstance(spec, EntrySpec) or next(stored) in settled:
                        report.outcomes.append(EntryOutcome(kind, spec.key, "unchanged"))
                        continue
                    outcome = _import_entry(spec, publish=publish, note=note, acting_user=acting_user,
                                            source=spec.source, problems=problems,
                                            override_reason=override_reason, known=known, writer=writer, seen=seen,
                                            refused=refused, circle=in_circle.get(spec.key))
                    if outcome is not None:
                        report.outcomes.append(outcome)
                if writer is not None:
                    writer.flush(problems, refused)  # before the next kind reads what this one wrote
                if seen and not problems:
                    record(kind, seen, publish=publish)
            if problems:
                raise ImportFailed(problems, side_files)
            if after is not None:
                after()
            if dry_run:
                raise _DryRun(report)
    except _DryRun:
        pass
    except ImportFailed:
        if not dry_run:  # a dry run tried nothing; a real import was refused, and an auditor sees it
            for refusal in refused:
                record_refusal(refusal)
        raise
    return report


_CHUNK = 500  # keys per IN (...) query, well below every backend's parameter limit


def _writer(kind: str, specs: list[EntrySpec], known: _Known, *, publish: bool, note: str,
            acting_user: User, override_reason: str | None) -> BulkWriter:
    entries = [e for spec in specs if (e := known.entries.get(stored_key(kind, spec.key))) is not None]
    wanted = {e.pk: spec.labels for spec in specs if (e := known.entries.get(stored_key(kind, spec.key))) is not None}
    return BulkWriter(kind, entries, labels_wanted=wanted, publish=publish, note=note, acting_user=acting_user,
                      actor=ACTOR, override_reason=override_reason)


def stored_key(kind: str, key: str) -> str:
    """How the database spells an entry's key: URIs and URI templates are stored normalised."""
    if kind == "resource":
        return normalize_uri(key)
    if kind == "template":
        return normalize_uri_template(key)
    return key


@dataclass
class _Known:
    """What the database holds for one kind's entries in the file, read in a few bulk queries.

    Entries come with their child rows; `newest` maps an entry's pk to its newest version
    (pk, number, content hash). Each entry appears once in a file, so nothing read here goes
    stale before that entry is imported.
    """

    entries: dict[str, VersionedEntry] = field(default_factory=dict)
    newest: dict[int, tuple[int, int, str]] = field(default_factory=dict)
    resource_uris: set[str] = field(default_factory=set)  # referenced URIs that exist
    uri_by_pk: dict[int, str] = field(default_factory=dict)

    @classmethod
    def read(cls, kind_name: str, specs: list[EntrySpec], *, lock: bool = False) -> _Known:
        """`lock`: lock the entries' rows as they are read, so the bulk writer may save them as read
        (the per-entry `drafts.save_draft` locks and re-reads each one itself)."""
        kind = KINDS[kind_name]
        known = cls()
        keys = [stored_key(kind_name, spec.key) for spec in specs]
        for start in range(0, len(keys), _CHUNK):
            rows = kind.entry_model.objects.filter(**{f"{kind.key_field}__in": keys[start:start + _CHUNK]})
            if lock:
                rows = rows.select_for_update()
            if kind_name == "prompt":
                rows = rows.prefetch_related("arguments",
                                             Prefetch("messages", PromptMessage.objects.select_related("resource")))
            elif kind_name in ("template", "snippet"):
                rows = rows.prefetch_related("variables" if kind_name == "template" else "arguments")
            known.entries.update((entry.key, entry) for entry in rows)
        ids = [entry.pk for entry in known.entries.values()]
        for start in range(0, len(ids), _CHUNK):
            newest = (kind.version_model.objects.filter(entry_id__in=ids[start:start + _CHUNK])
                      .order_by("entry_id", "-number").values_list("entry_id", "pk", "number", "content_hash"))
            for entry_id, pk, number, digest in newest:
                known.newest.setdefault(entry_id, (pk, number, digest))
        referenced = sorted({normalize_uri(uri) for spec in specs for uri, _where in spec.references})
        for start in range(0, len(referenced), _CHUNK):
            known.resource_uris.update(Resource.objects.filter(uri__in=referenced[start:start + _CHUNK])
                                       .values_list("uri", flat=True))
        linked = {m.resource_id for entry in known.entries.values() if kind_name == "prompt"
                  for m in entry.messages.all() if m.resource_id}  # type: ignore[attr-defined]
        if linked:
            known.uri_by_pk = dict(Resource.objects.filter(pk__in=linked).values_list("pk", "uri"))
        return known


def _import_entry(spec: EntrySpec, *, publish: bool, note: str, acting_user: User, source: str,
                  problems: list[str], override_reason: str | None = None,
                  known: _Known | None = None, writer: BulkWriter | None = None,
                  seen: list[tuple[EntrySpec, VersionedEntry, bool]] | None = None,
                  refused: list[Any] | None = None, circle: Circle | None = None) -> EntryOutcome | None:
    """Make the entry's draft what `spec` says (and publish it); `seen` collects (spec, entry, found
    unchanged without warnings) for registry.portable.unchanged.record once its writes are flushed.
    Only an entry compared equal is recorded as equal: one just written is compared on the next import."""
    outcome = _import_one(spec, publish=publish, note=note, acting_user=acting_user, source=source,
                          problems=problems, override_reason=override_reason, known=known, writer=writer,
                          refused=refused, circle=circle)
    if outcome is not None and seen is not None:
        seen.append((spec, outcome[1], not outcome[0].changed and not outcome[0].warnings))
    return outcome[0] if outcome is not None else None


def _import_one(spec: EntrySpec, *, publish: bool, note: str, acting_user: User, source: str,
                problems: list[str], override_reason: str | None,
                known: _Known | None, writer: BulkWriter | None,
                refused: list[Any] | None = None, circle: Circle | None = None,
                ) -> tuple[EntryOutcome, VersionedEntry] | None:
    kind = KINDS[spec.kind]
    if known is None:
        known = _Known.read(spec.kind, [spec])
    missing = [(uri, where) for uri, where in spec.references if normalize_uri(uri) not in known.resource_uris]
    for uri, where in missing:
        problems.append(f"{where}: no registry resource has the URI {uri}; "
                        "list it under resources: or create it first.")
    if missing:
        return None
    entry: VersionedEntry | None = known.entries.get(stored_key(spec.kind, spec.key))
    wanted = normalised(spec.data)
    before = draft_data(entry, resource_uris=known.uri_by_pk) if entry is not None else None
    if before is None:
        status = "created"
    elif normalised(before) == wanted:
        status = "unchanged"
    else:
        status = "updated"
    if status != "unchanged":  # team ownership: a problem naming the entry, not an error half-way through
        refusal = roles.folder_refusal(acting_user, [*([entry.folder] if entry is not None else []),
                                                     wanted.get("folder", entry.folder if entry is not None else "")],
                                       entry=entry or SimpleNamespace(kind=spec.kind, key=spec.key, pk=None),
                                       attempted="import")
        if refusal is not None:
            problems.append(f"{spec.location}: {refusal.message}")
            if refused is not None:
                refused.append(refusal)
            return None
    outcome = EntryOutcome(spec.kind, spec.key, status)
    bulk = writer is not None and writer.takes(entry, spec.labels)
    left_folder = entry.folder if entry is not None and status != "unchanged" and not wanted.get("folder") else ""
    if entry is None:
        entry = kind.entry_model()
    if status != "unchanged" and bulk:
        outcome.changes = writer.save_draft(entry, wanted, note=note or f"Imported from {source}")  # type: ignore[union-attr]
    elif status != "unchanged":
        outcome.changes = save_draft(entry, wanted, acting_user=acting_user, actor=ACTOR,
                                     note=note or f"Imported from {source}")
    entry_problems = list(spec.warnings)  # placeholder syntax, already naming file, line, entry and field
    report = validate_entry(entry)
    if circle is not None and isinstance(entry, Snippet):
        circled(report, entry.text, entry.name, circle)
    if not entry_problems:  # placeholder syntax problems already say where; skip the same ones worded generally
        entry_problems += [f"{spec.location}: {e}" for e in report.errors]
    outcome.warnings = [f"{spec.location}: {w}" for w in report.warnings]
    if entry.archived_at is not None:
        outcome.warnings.append(f"{spec.location}: the entry is archived; it stays unserved until it is "
                                "restored in the admin.")
    if left_folder:  # the file is the whole truth, folder too: say so when that empties a folder
        outcome.warnings.append(f"{spec.location}: moved from the folder '{left_folder}' to the top level, as the "
                                f"file gives it no folder; add 'folder: {left_folder}' to keep it there.")
    if not publish:
        outcome.warnings = [f"{p} (blocks publishing)" for p in entry_problems] + outcome.warnings
        return outcome, entry
    if entry_problems:
        problems.extend(entry_problems)
        return outcome, entry
    try:
        _publish(entry, spec, outcome, note=note, acting_user=acting_user,
                 override_reason=override_reason, newest=known.newest.get(entry.pk),
                 writer=writer if bulk else None)
    except RegistryError as exc:
        problems.append(f"{spec.location}: {exc.message}")
        if refused is not None and getattr(exc, "audit", None) is not None:
            refused.append(exc)  # a role or review rule refused it: audited once the import has rolled back
    return outcome, entry


def _publish(entry: VersionedEntry, spec: EntrySpec, outcome: EntryOutcome, *, note: str,
             acting_user: User, override_reason: str | None = None,
             newest: tuple[int, int, str] | None = None, writer: BulkWriter | None = None) -> None:
    """Publish the draft if it differs from the newest version, else point the file's labels at that.

    `newest` is the entry's newest version (pk, number, hash) as read before its draft was saved.
    With `writer` the publish is collected by the bulk writer; a label move onto an existing
    version (rare) is made by the services when the writer flushes.
    """
    if newest is None or newest[2] != content_hash(snapshot_of(entry)):
        if writer is not None:
            outcome.published = writer.publish(entry, spec.labels, newest=newest)
            return
        version = services.publish(entry, acting_user=acting_user, note=note, labels=spec.labels, actor=ACTOR,
                                   override_reason=override_reason)
        outcome.published = version.number
        return
    latest_pk, latest_number, _digest = newest
    label_model = KINDS[spec.kind].label_model
    if writer is not None:
        pointing = writer.label_points_at(entry)
    else:
        pointing = dict(label_model.objects.filter(entry=entry).values_list("name", "version_id"))
    for label in spec.labels:
        if pointing.get(label) != latest_pk:
            if writer is not None:  # after the draft it collected, as the services would order them
                writer.move_label_later(entry, label, latest_number, location=spec.location)
            else:
                services.move_label(entry, label=label, version_number=latest_number, acting_user=acting_user,
                                    note=note, actor=ACTOR, override_reason=override_reason)
            outcome.labels_moved.append(label)


# ------------------------------------------------------------------------------------------ export
def export_document(*, include_archived: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every entry's draft in the portable format, sorted by key; archived entries are left out.

    A fixed number of queries per kind whatever the registry's size: entries with their child
    rows, every label (number only, no snapshot), every entry's newest version number and the
    URIs of linked resources are each read in one go.
    """
    document: dict[str, list[dict[str, Any]]] = {}
    resource_uris: dict[int, str] | None = None
    for section, kind_name in SECTIONS.items():
        kind = KINDS[kind_name]
        entries = kind.entry_model.objects.order_by(kind.key_field)
        if not include_archived:
            entries = entries.filter(archived_at__isnull=True)
        if kind_name == "prompt":
            entries = entries.prefetch_related("arguments", "messages")
            resource_uris = dict(Resource.objects.values_list("pk", "uri"))
        elif kind_name in ("template", "snippet"):
            entries = entries.prefetch_related("variables" if kind_name == "template" else "arguments")
        entries = list(entries)
        label_rows = kind.label_model.objects.all()
        if not include_archived:
            label_rows = label_rows.of_unarchived_entries()
        labels: dict[int, list[tuple[str, int]]] = {}
        for entry_id, name, number in label_rows.order_by("entry_id", "name").values_list(
                "entry_id", "name", "version__number"):
            labels.setdefault(entry_id, []).append((name, number))
        newest = dict(kind.version_model.objects.order_by().values("entry_id").annotate(newest=Max("number"))
                      .values_list("entry_id", "newest"))
        items = []
        for entry in entries:
            pointing = labels.get(entry.pk, [])
            latest = newest.get(entry.pk)
            released = dict(pointing)
            on_latest = [name for name, number in pointing if number == latest]
            items.append(entry_document(kind_name, draft_data(entry, resource_uris=resource_uris), released=released,
                                        labels=on_latest if latest is not None else None))
        if items:
            document[section] = items
    return document


EXPORT_HEADER = (
    "# MCP prompt & resource registry: the draft of every entry (format: registry/portable/format.py).\n"
    "# Import with: manage.py registry_import THIS_FILE [--dry-run] [--publish --note TEXT]\n"
    "# `released` shows which version each label serves; import ignores it.\n"
)


def export_yaml(*, include_archived: bool = False) -> str:
    return dump_document(export_document(include_archived=include_archived), header=EXPORT_HEADER)
