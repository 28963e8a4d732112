"""What a release of a snippet changes downstream: every dependent entry per label, before and after.

The reviewer of a shared part sees, on the review page, the compare page and the publish page of
a snippet, each entry that follows it on the label being moved (`registry.release.uses.dependents`,
the one rule of who depends), as its client is served it now and as it would be served after the
release (`registry.authoring.composition`: the one rule of which snippet version a reference gets),
shown with the admin's diff. At most LIMIT dependents are expanded; the page says how many more.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.urls import reverse
from django.utils.translation import gettext as _

from registry.admin.diff.changes import EntryDiff
from registry.admin.diff.sections import build
from registry.authoring.composition import db_resolver, expand_snapshot
from registry.authoring.snapshots import diff_loader
from registry.formats.references import ExpansionError, Resolver
from registry.kinds import KINDS, kind_name
from registry.models import PRODUCTION, Snippet
from registry.release.uses import dependents

LIMIT = 20


@dataclass
class Dependent:
    """One dependent entry served from one label, and what the release does to what it is served."""

    kind: str
    kind_name: str
    key: str
    label: str
    url: str
    version: int | None = None
    diff: EntryDiff | None = None
    error: str = ""


@dataclass
class LabelGroup:
    label: str
    dependents: list[Dependent] = field(default_factory=list)


@dataclass
class Downstream:
    """The dependents of a release of `snippet` on `label`, grouped by the label that serves each."""

    snippet: str
    label: str
    total: int
    groups: list[LabelGroup]

    @property
    def more(self) -> int:
        return max(0, self.total - LIMIT)


def entry_url(kind: str, entry_id: int) -> str:
    return reverse(f"admin:registry_{KINDS[kind].entry_model._meta.model_name}_change", args=[entry_id])


def _after_resolver(label: str, name: str, candidate: int | str) -> Resolver:
    """What an entry served from `label` would get once the candidate (a version number, or the
    text of a draft not yet published) is released for snippet `name`."""
    if isinstance(candidate, int):
        return db_resolver(label, overrides={name: candidate})
    base = db_resolver(label)

    def resolve(ref: str, pinned: int | None) -> str | None:
        return candidate if ref == name and pinned is None else base(ref, pinned)

    return resolve


def _served_versions(rows: Iterable[tuple[str, str, str]]) -> dict[tuple[str, str, str], Any]:
    """(kind, key, label) -> the version that label row serves, in one query per kind."""
    out: dict[tuple[str, str, str], Any] = {}
    by_kind: dict[str, list[tuple[str, str]]] = {}
    for kind, key, label in rows:
        by_kind.setdefault(kind, []).append((key, label))
    for kind, pairs in by_kind.items():
        spec = KINDS[kind]
        key_field = f"entry__{spec.key_field}"
        found = spec.label_model.objects.filter(**{f"{key_field}__in": {k for k, _l in pairs}},
                                                name__in={lbl for _k, lbl in pairs}).select_related(
            "version", "entry")
        for row in found:
            out[(kind, getattr(row.entry, spec.key_field), row.name)] = row
    return out


def downstream(snippet: Snippet, label: str, candidate: int | str | None, *, limit: int = LIMIT) -> Downstream:
    """The dependents a release of `candidate` (a version number or a draft's text; None: nothing,
    so nothing changes) of `snippet` on `label` changes, the first `limit` with their diffs."""
    rows = sorted(dependents(snippet.name, label), key=lambda r: (r[2] != label, r[2], r[0], r[1]))
    shown = rows[:limit]
    served = _served_versions(shown)
    own_labels = set(snippet.labels.values_list("name", flat=True))
    groups: dict[str, LabelGroup] = {}
    # One resolver per label served from, before and after: each caches what it reads, so the
    # snippet versions are read once per label, not once per dependent.
    before_of: dict[str, Resolver] = {}
    after_of: dict[str, Resolver] = {}
    for kind, key, served_label in shown:
        row = served.get((kind, key, served_label))
        item = Dependent(kind, str(kind_name(kind)), key, served_label,
                         entry_url(kind, row.entry_id) if row is not None else "")
        groups.setdefault(served_label, LabelGroup(served_label)).dependents.append(item)
        if row is None:
            continue
        item.version = row.version.number
        # The release reaches this row if it is served from `label`, or falls back to production for
        # want of a snippet label of its own name.
        reached = served_label == label or (label == PRODUCTION and served_label not in own_labels)
        try:
            before = expand_snapshot(kind, row.version.snapshot,
                                     before_of.setdefault(served_label, db_resolver(served_label)))
            if candidate is None or not reached:
                after = before
            else:
                if served_label not in after_of:
                    after_of[served_label] = _after_resolver(served_label, snippet.name, candidate)
                after = expand_snapshot(kind, row.version.snapshot, after_of[served_label])
        except ExpansionError as exc:
            item.error = str(exc)
            continue
        item.diff = build(kind, before, after, before_name=_("Served now"), after_name=_("After the release"),
                          load=diff_loader())
    return Downstream(snippet.name, label, len(rows), list(groups.values()))
