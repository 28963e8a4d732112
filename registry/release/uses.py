"""Who uses what: the `EntryUse` index of snippet references and embedded resources, and what it answers.

Rows are written once, when a version is inserted (`record_uses`, from the version models'
post_save in registry/release/receivers.py: every path that publishes passes there), from the
version's own snapshot: its `includes` (snippet references, registry/formats/references.py) and,
for prompts, the resources its messages embed or link. Versions never change, so neither do
their rows. Three readers share them: "used by" on snippet and resource pages and in the API
(`used_by`), the dependents a snippet release changes (`dependents`, recorded in the change log
and announced), and the refusal to archive a snippet that served entries use (`served_users`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Q

from registry.changes import Change, record_changes
from registry.formats.references import MAX_DEPTH, parse_spelled
from registry.formats.uris import lookup_uri
from registry.kinds import KINDS, SERVED_KINDS
from registry.models import PRODUCTION, EntryUse, Rollout


def _uses_of(kind: str, snapshot: dict[str, Any]) -> list[tuple[str, str, int | None]]:
    """(used kind, used key, pinned) of one snapshot, each once."""
    found: dict[tuple[str, str, int | None], None] = {}
    for spelled in snapshot.get("includes") or ():
        ref = parse_spelled(spelled)
        found[("snippet", ref.name, ref.pinned)] = None
    if kind == "prompt":
        for message in snapshot.get("messages") or ():
            block = message.get("content") or {}
            uri = (block.get("resource") or {}).get("uri") if block.get("type") == "resource" else (
                block.get("uri") if block.get("type") == "resource_link" else None)
            if uri and "{{" not in uri:
                found[("resource", lookup_uri(uri), None)] = None
    return list(found)


def record_uses(kind: str, version: Any) -> None:
    """Index a just-inserted version's uses (nothing for a version that uses nothing)."""
    rows = [EntryUse(user_kind=kind, user_entry_id=version.entry_id, user_version_id=version.pk,
                     user_version_number=version.number, used_kind=used_kind, used_key=key[:2048], pinned=pinned)
            for used_kind, key, pinned in _uses_of(kind, version.snapshot or {})]
    if rows:
        EntryUse.objects.bulk_create(rows)


@dataclass
class Use:
    """One version of one entry using the snippet or resource asked about."""

    kind: str
    key: str
    entry_id: int
    version: int
    pinned: int | None
    labels: list[str] = field(default_factory=list)  # the labels serving this version now


def used_by(used_kind: str, used_key: str, *, limit: int | None = None) -> list[Use]:
    """Every version that uses `used_key` (a snippet name or a resource URI), newest first per entry,
    with the labels that serve it now: what "used by" shows. A handful of queries whatever the size."""
    if used_kind == "resource":
        used_key = lookup_uri(used_key)
    rows = list(EntryUse.objects.filter(used_kind=used_kind, used_key=used_key).order_by(
        "user_kind", "user_entry_id", "-user_version_number").values_list(
        "user_kind", "user_entry_id", "user_version_id", "user_version_number", "pinned"))
    by_kind: dict[str, list[tuple[int, int, int, int | None]]] = {}
    for kind, entry_id, version_id, number, pinned in rows:
        by_kind.setdefault(kind, []).append((entry_id, version_id, number, pinned))
    out: list[Use] = []
    for kind, uses in sorted(by_kind.items()):
        spec = KINDS[kind]
        keys = dict(spec.entry_model.objects.filter(pk__in={u[0] for u in uses}).values_list("pk", spec.key_field))
        labels: dict[int, list[str]] = {}
        for version_id, name in spec.label_model.objects.filter(version_id__in={u[1] for u in uses}).values_list(
                "version_id", "name").order_by("name"):
            labels.setdefault(version_id, []).append(name)
        out += [Use(kind, keys.get(entry_id, ""), entry_id, number, pinned, labels.get(version_id, []))
                for entry_id, version_id, number, pinned in uses]
    return out[:limit] if limit is not None else out


@dataclass
class Reach:
    """What reaches a following reference to some snippets: the snippet names whose following
    references count (those snippets and every snippet some version of which reaches them) and
    the snippet versions that reach them, which a pinned reference ({{> name@N }}) counts by."""

    names: set[str]
    versions: set[tuple[str, int]]

    def uses(self) -> Q:
        """The EntryUse rows of a version whose text reaches them: following one of `names`, or
        pinning one of `versions`."""
        found = Q(used_key__in=sorted(self.names), pinned__isnull=True)
        for name, number in sorted(self.versions):
            found |= Q(used_key=name, pinned=number)
        return Q(used_kind="snippet") & found


def reaching(names: Iterable[str]) -> Reach:
    """The snippets and snippet versions whose texts reach a following reference to `names`,
    directly or through other snippets, following or pinned (at most MAX_DEPTH levels, as
    expansion allows). A name is counted if any of its versions reaches them (an entry following
    it may be served any of them); a pinned reference only if its version does."""
    reach = Reach(set(names), set())
    for _level in range(MAX_DEPTH):
        rows = set(EntryUse.objects.filter(reach.uses(), user_kind="snippet").values_list(
            "user_entry_id", "user_version_number"))
        names_of = dict(KINDS["snippet"].entry_model.objects.filter(
            pk__in={entry_id for entry_id, _number in rows}).values_list("pk", "name"))
        more = {(names_of[entry_id], number) for entry_id, number in rows if entry_id in names_of} - reach.versions
        if not more:
            break
        reach.versions |= more
        reach.names |= {name for name, _number in more}
    return reach


def including_snippets(names: Iterable[str]) -> set[str]:
    """`names` and every snippet some version of which reaches them (`reaching`)."""
    return reaching(names).names


def dependents(snippet_name: str, label: str) -> list[tuple[str, str, str]]:
    """(kind, key, label name) of every served label row whose version, or whose running rollout's
    candidate, reaches `snippet_name` (directly, through snippets that include it, following or
    pinned: `reaching`) and that a move of the snippet's `label` can change: rows of `label`
    itself, or for production every row (an entry served from another label falls back to the
    snippet's production version where the snippet has no label of that name).
    Over-approximates on purpose: the hub announces only what a listener is served differently."""
    reach = reaching([snippet_name])
    out: dict[tuple[str, str, str], None] = {}
    versions: dict[str, set[int]] = {}
    numbers: dict[str, set[tuple[int, int]]] = {}  # kind -> (entry id, version number) reaching it
    uses = EntryUse.objects.filter(reach.uses(), user_kind__in=SERVED_KINDS)
    for kind, version_id, entry_id, number in uses.values_list("user_kind", "user_version_id", "user_entry_id",
                                                               "user_version_number"):
        versions.setdefault(kind, set()).add(version_id)
        numbers.setdefault(kind, set()).add((entry_id, number))
    for kind, ids in sorted(versions.items()):
        spec = KINDS[kind]
        rows = spec.label_model.objects.filter(version_id__in=sorted(ids)).of_unarchived_entries()
        if label != PRODUCTION:
            rows = rows.filter(name=label)
        for key, name in rows.values_list(f"entry__{spec.key_field}", "name").order_by(f"entry__{spec.key_field}",
                                                                                       "name"):
            out[(kind, key, name)] = None
    rollouts = Rollout.objects.filter(entry_kind__in=sorted(numbers))
    if label != PRODUCTION:
        rollouts = rollouts.filter(label=label)
    candidates = [(kind, entry_id, name) for kind, entry_id, name, number in rollouts.values_list(
        "entry_kind", "entry_id", "label", "candidate_version") if (entry_id, number) in numbers.get(kind, set())]
    for kind in sorted({kind for kind, _entry_id, _name in candidates}):
        spec = KINDS[kind]
        keys = dict(spec.label_model.objects.filter(
            entry_id__in={entry_id for k, entry_id, _n in candidates if k == kind},
        ).of_unarchived_entries().values_list("entry_id", f"entry__{spec.key_field}"))
        for k, entry_id, name in candidates:
            if k == kind and entry_id in keys:
                out[(kind, keys[entry_id], name)] = None
    return sorted(out)


def record_dependent_changes(snippet_name: str, *labels: str | None) -> list[Change]:
    """A change-log row per entry label row that follows `snippet_name` on one of `labels` (its
    dependents: what they serve changes with the snippet's label there), in the caller's
    transaction, so that every process re-reads them and the hub announces those whose served
    text changed. Every path that moves a snippet's label calls it: the label receivers
    (registry/release/receivers.py) and whoever writes labels around the models."""
    rows: dict[tuple[str, str, str, bool], None] = {}
    for label in labels:
        if label:
            rows.update(((kind, key, name, False), None) for kind, key, name in dependents(snippet_name, label))
    return record_changes(list(rows)) if rows else []


def served_users(snippet_name: str) -> list[Use]:
    """The uses of `snippet_name` by versions some label serves now (what archiving it would break)."""
    return [use for use in used_by("snippet", snippet_name) if use.labels]
