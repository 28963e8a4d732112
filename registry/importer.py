"""Prompts as code: import a YAML file into the registry, and export the registry's drafts.

`import_documents` makes each listed entry's draft what the file says, in ONE transaction
(any error: nothing is saved), and with `publish=True` publishes drafts that differ from
their newest version and points the entry's labels at it. Re-importing the same file writes
nothing: no drafts, versions, label moves or audit rows. The format is in `registry.portable`.

Protected labels (services module docstring) hold here too: an import by a user (the REST
API) that would move `production` fails with ApprovalRequired for that entry, and nothing is
saved, unless `override_reason` is given by a user with the override permission. The intended
CI flow is: import drafts (no --publish), then request publication and have it approved. The
management command runs as the operator (acting_user=None): an automatic, audited override.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from django.db import transaction

from registry import services
from registry.drafts import draft_data, normalised, save_draft
from registry.errors import RegistryError
from registry.kinds import KINDS
from registry.models import Resource, VersionedEntry
from registry.portable import (
    SECTIONS,
    EntrySpec,
    FormatError,
    Loaded,
    dump_document,
    entry_document,
    load_file,
    read_entries,
)
from registry.snapshots import content_hash, snapshot_of
from registry.uris import normalize_uri, normalize_uri_template
from registry.validation import validate_entry

ACTOR = "registry_import"
ORDER = ("resource", "template", "prompt")  # resources first: prompts may embed or link them
PLURAL = {kind: section for section, kind in SECTIONS.items()}


class ImportFailed(RegistryError):
    """The import was refused and rolled back; `problems` names file, entry and field for each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


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
        for kind in ("prompt", "resource", "template"):
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


def _load(path_or_data: str | Path | Mapping[str, Any], source: str | None, base_dir: Path | None) -> Loaded:
    if isinstance(path_or_data, (str, Path)):
        loaded = load_file(path_or_data)
        if source:
            loaded.source = source
        return loaded
    return Loaded(dict(path_or_data), source or "<data>", base_dir or Path.cwd())


def import_documents(
    path_or_data: str | Path | Mapping[str, Any],
    *,
    publish: bool = False,
    note: str = "",
    dry_run: bool = False,
    acting_user: services.User = None,
    source: str | None = None,
    base_dir: Path | None = None,
    override_reason: str | None = None,
) -> ImportReport:
    """Import a prompts-as-code file (a path, or already-parsed data with `base_dir` for side files).

    Raises ImportFailed, listing every problem, when anything is wrong; then nothing is saved.
    With `dry_run` everything runs (including publishing) inside a transaction that is rolled back.
    """
    note = (note or "").strip()
    if publish and not note:
        raise ImportFailed(["A change note is required to publish: say what changed and why."])
    try:
        loaded = _load(path_or_data, source, base_dir)
        specs = read_entries(loaded)
    except FormatError as exc:
        raise ImportFailed(exc.problems) from exc
    report = ImportReport(loaded.source, dry_run, publish)
    try:
        with transaction.atomic(durable=True):
            problems: list[str] = []
            for kind in ORDER:
                for spec in (s for s in specs if s.kind == kind):
                    outcome = _import_entry(spec, publish=publish, note=note, acting_user=acting_user,
                                            source=loaded.source, problems=problems,
                                            override_reason=override_reason)
                    if outcome is not None:
                        report.outcomes.append(outcome)
            if problems:
                raise ImportFailed(problems)
            if dry_run:
                raise _DryRun(report)
    except _DryRun:
        pass
    return report


def _import_entry(spec: EntrySpec, *, publish: bool, note: str, acting_user: services.User, source: str,
                  problems: list[str], override_reason: str | None = None) -> EntryOutcome | None:
    kind = KINDS[spec.kind]
    missing = [(uri, where) for uri, where in spec.references
               if not Resource.objects.filter(uri=normalize_uri(uri)).exists()]
    for uri, where in missing:
        problems.append(f"{where}: no registry resource has the URI {uri}; list it under resources: or create it first.")
    if missing:
        return None
    key = normalize_uri(spec.key) if spec.kind == "resource" else (
        normalize_uri_template(spec.key) if spec.kind == "template" else spec.key)
    entry: VersionedEntry | None = kind.entry_model.objects.filter(**{kind.key_field: key}).first()  # type: ignore[attr-defined]
    wanted = normalised(spec.data)
    before = draft_data(entry) if entry is not None else None
    if before is None:
        status = "created"
    elif normalised(before) == wanted:
        status = "unchanged"
    else:
        status = "updated"
    outcome = EntryOutcome(spec.kind, spec.key, status)
    if entry is None:
        entry = kind.entry_model()  # type: ignore[assignment]
    if status != "unchanged":
        outcome.changes = save_draft(entry, wanted, acting_user=acting_user, actor=ACTOR,  # type: ignore[arg-type]
                                     note=note or f"Imported from {source}")
    entry_problems = list(spec.warnings)  # placeholder syntax, already naming file, line, entry and field
    report = validate_entry(entry)  # type: ignore[arg-type]
    if not entry_problems:  # placeholder syntax problems already say where; skip the same ones worded generally
        entry_problems += [f"{spec.location}: {e}" for e in report.errors]
    outcome.warnings = [f"{spec.location}: {w}" for w in report.warnings]
    if entry.archived_at is not None:  # type: ignore[union-attr]
        outcome.warnings.append(f"{spec.location}: the entry is archived; it stays unserved until it is "
                                "restored in the admin.")
    if not publish:
        outcome.warnings = [f"{p} (blocks publishing)" for p in entry_problems] + outcome.warnings
        return outcome
    if entry_problems:
        problems.extend(entry_problems)
        return outcome
    try:
        _publish(entry, spec, outcome, note=note, acting_user=acting_user,  # type: ignore[arg-type]
                 override_reason=override_reason)
    except RegistryError as exc:
        problems.append(f"{spec.location}: {exc.message}")
    return outcome


def _publish(entry: VersionedEntry, spec: EntrySpec, outcome: EntryOutcome, *, note: str,
             acting_user: services.User, override_reason: str | None = None) -> None:
    latest = services.latest_version(entry)
    if latest is None or latest.content_hash != content_hash(snapshot_of(entry)):
        version = services.publish(entry, acting_user=acting_user, note=note, labels=spec.labels, actor=ACTOR,
                                   override_reason=override_reason)
        outcome.published = version.number
        return
    label_model = KINDS[spec.kind].label_model
    pointing = dict(label_model.objects.filter(entry=entry).values_list("name", "version_id"))  # type: ignore[attr-defined]
    for label in spec.labels:
        if pointing.get(label) != latest.pk:
            services.move_label(entry, label=label, version_number=latest.number, acting_user=acting_user,
                                note=note, actor=ACTOR, override_reason=override_reason)
            outcome.labels_moved.append(label)


# ------------------------------------------------------------------------------------------ export
def export_document(*, include_archived: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every entry's draft in the portable format, sorted by key; archived entries are left out."""
    document: dict[str, list[dict[str, Any]]] = {}
    for section, kind_name in SECTIONS.items():
        kind = KINDS[kind_name]
        entries = kind.entry_model.objects.order_by(kind.key_field)  # type: ignore[attr-defined]
        if not include_archived:
            entries = entries.filter(archived_at__isnull=True)
        if kind_name == "prompt":
            entries = entries.prefetch_related("arguments", "messages")
        elif kind_name == "template":
            entries = entries.prefetch_related("variables")
        items = []
        for entry in entries:
            labels = list(kind.label_model.objects.filter(entry=entry).select_related("version"))  # type: ignore[attr-defined]
            latest = services.latest_version(entry)
            released = {label.name: label.version.number for label in labels}
            on_latest = [label.name for label in labels if latest is not None and label.version_id == latest.pk]
            items.append(entry_document(kind_name, draft_data(entry), released=released,
                                        labels=on_latest if latest is not None else None))
        if items:
            document[section] = items
    return document


EXPORT_HEADER = (
    "# MCP prompt & resource registry: the draft of every entry (format: registry/portable.py).\n"
    "# Import with: manage.py registry_import THIS_FILE [--dry-run] [--publish --note TEXT]\n"
    "# `released` shows which version each label serves; import ignores it.\n"
)


def export_yaml(*, include_archived: bool = False) -> str:
    return dump_document(export_document(include_archived=include_archived), header=EXPORT_HEADER)
