"""Refuse a snippet release that would serve a dependent placeholders it cannot fill.

A prompt declares the arguments of the snippets it includes when it is saved, against the
versions those snippets may serve then (registry/authoring/reference_checks.py). A snippet version
released later may use an argument its followers do not declare; served as is, the placeholder
renders empty ("Be ." where "Be {{ mood }}." was meant) and every client of every follower gets
broken text with no error anywhere. So moving a snippet's label (publish, move, rollback, an
approved review, a scheduled release: all pass `services._point_label`) first resolves every
dependent served from that label row as it would be served after the move, with the serving rule
itself (registry/serving/composed.py `SnippetMaps.parts`), and checks the arguments of each
snippet version it newly reaches with the save rule (`argument_gap`), rollout candidates served
on that row included. Only what the move changes is judged: a dependent's older gap is not this
release's to refuse. An entry's own release on a label (and a rollout of it) is judged the same
way against the snippet versions that label serves (`entry_problems`): the draft's check at save
reads the snippets' newest versions, not the label's. `release_refusal` is the one entry point:
the label move itself, a review request when it is filed and an approval scheduled for later ask
it, so a request that could never be carried out is refused when asked, not at go-live.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from django.utils.translation import gettext as _

from registry.authoring.reference_checks import argument_gap
from registry.errors import InvalidUri
from registry.formats.uris import template_variable_names
from registry.kinds import KINDS
from registry.models import Rollout, SnippetVersion
from registry.release import uses
from registry.serving.composed import SnippetMaps, read_snippet_maps

SHOWN = 20  # problems named in the refusal; the count says how many more


class Candidate(NamedTuple):
    """A version not written yet (the draft a review request asks for), as the guard reads versions."""

    number: int
    listing: dict[str, Any]
    snapshot: dict[str, Any]

    @classmethod
    def of_draft(cls, number: int, snapshot: dict[str, Any]) -> Candidate:
        return cls(number, {"includes": list(snapshot.get("includes") or ())}, snapshot)


def _provided(kind: str, snapshot: dict[str, Any]) -> dict[str, str]:
    """What a dependent's served version fills snippet placeholders from (see `argument_gap`)."""
    if kind == "prompt":
        return {arg["name"]: arg.get("type") or "text" for arg in snapshot.get("arguments") or ()}
    if kind == "template":
        try:
            return dict.fromkeys(template_variable_names(snapshot.get("uriTemplate") or ""), "text")
        except InvalidUri:  # refused at its publish; nothing to judge
            return {}
    return {}


def _moved(maps: SnippetMaps, label: str, name: str, version: Any) -> SnippetMaps:
    """`maps` as they are once `label` of snippet `name` serves `version`."""
    rows = {row: dict(names) for row, names in maps.rows.items()}
    if label in rows:
        rows[label][name] = (version.number, tuple((version.listing or {}).get("includes") or ()))
    return SnippetMaps(maps.label, rows)


class _Arguments:
    """The arguments of snippet versions, read once each."""

    def __init__(self) -> None:
        self.read: dict[tuple[str, int], list[dict[str, Any]]] = {}

    def of(self, name: str, number: int) -> list[dict[str, Any]]:
        if (name, number) not in self.read:
            snapshot = SnippetVersion.objects.filter(entry__name=name, number=number).values_list(
                "snapshot", flat=True).first()
            self.read[(name, number)] = list((snapshot or {}).get("arguments") or ())
        return self.read[(name, number)]


def _served_versions(kind: str, row: str, keys: list[str]) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(key, listing, snapshot) of what label row `row` of each entry `keys` serves: its version,
    and the candidate of a rollout running on that row (some of its clients are served that)."""
    spec = KINDS[kind]
    out: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
    ids: dict[int, str] = {}
    for entry_id, key, listing, snapshot in spec.label_model.objects.filter(
            name=row, **{f"entry__{spec.key_field}__in": keys}).values_list(
            "entry_id", f"entry__{spec.key_field}", "version__listing", "version__snapshot").order_by(
            f"entry__{spec.key_field}"):
        ids[entry_id] = key
        out.append((key, listing or {}, snapshot or {}))
    candidates = Rollout.objects.filter(entry_kind=kind, entry_id__in=sorted(ids), label=row).values_list(
        "entry_id", "candidate_version")
    for entry_id, number in candidates:
        for listing, snapshot in spec.version_model.objects.filter(entry_id=entry_id, number=number).values_list(
                "listing", "snapshot"):
            out.append((ids[entry_id], listing or {}, snapshot or {}))
    return out


def _gaps(kind: str, key: str, row: str, parts: Iterable[tuple[str, int]], snapshot: dict[str, Any],
          arguments: _Arguments) -> list[str]:
    provided = _provided(kind, snapshot)
    problems = []
    for name, number in sorted(parts):
        for argument in arguments.of(name, number) if number else ():
            gap = argument_gap(kind, argument["name"], argument.get("type") or "text", name, provided)
            if gap is not None:
                problems.append(_("%(kind)s %(key)s (%(label)s): %(gap)s") % {
                    "kind": kind, "key": key, "label": row, "gap": gap})
    return problems


def _includes(listing: dict[str, Any], snapshot: dict[str, Any]) -> tuple[str, ...]:
    return tuple(listing.get("includes") or snapshot.get("includes") or ())


def release_problems(snippet_name: str, label: str, version: Any,
                     dependents: list[tuple[str, str, str]]) -> list[str]:
    """Why serving `version` of `snippet_name` on `label` would leave the (kind, key, label row)
    `dependents` (their versions and running rollout candidates) with placeholders they cannot
    fill, one line each; empty: the release may go."""
    problems: list[str] = []
    arguments = _Arguments()
    # The released version's own arguments, as it holds them (a draft asked for is in no table yet).
    arguments.read[(snippet_name, version.number)] = list((version.snapshot or {}).get("arguments") or ())
    by_row: dict[str, list[tuple[str, str]]] = {}
    for kind, key, row in dependents:
        by_row.setdefault(row, []).append((kind, key))
    for row, entries in sorted(by_row.items()):
        before = read_snippet_maps(row)
        after = _moved(before, label, snippet_name, version)
        for kind in sorted({kind for kind, _key in entries}):
            for key, listing, snapshot in _served_versions(kind, row, sorted(k for k2, k in entries if k2 == kind)):
                includes = _includes(listing, snapshot)
                new_parts = set(after.parts(row, includes)) - set(before.parts(row, includes))
                problems += _gaps(kind, key, row, new_parts, snapshot, arguments)
    return problems


def entry_problems(kind: str, key: str, label: str, version: Any, maps: dict[str, Any] | None = None) -> list[str]:
    """Why `version` of an entry, served on `label`, would be served placeholders it cannot fill
    by the snippet versions its references resolve to there (a prompt's own publish, label move,
    rollback or rollout: checked per label, where the draft's check at save could only read the
    snippets' newest versions); empty: it may be served there."""
    includes = _includes(version.listing or {}, version.snapshot or {})
    if not includes:
        return []
    maps = {} if maps is None else maps  # label -> SnippetMaps, for a caller judging many entries
    if label not in maps:
        maps[label] = read_snippet_maps(label)
    parts = maps[label].parts(label, includes)
    return _gaps(kind, key, label, parts, version.snapshot or {}, _Arguments())


def release_refusal(entry: Any, label: str, version: Any,
                    dependents: list[tuple[str, str, str]] | None = None) -> list[str]:
    """The refusal's lines if serving `version` (an EntryVersion or a `Candidate`) of `entry` on
    `label` would leave placeholders unfilled, for the entry itself or, for a snippet, for any of
    its `dependents` (read with `uses.dependents` when not given); empty: it may be served."""
    if entry.kind == "snippet":
        if dependents is None:
            dependents = uses.dependents(entry.key, label)
        problems = release_problems(entry.key, label, version, dependents) if dependents else []
        return refusal(entry.key, label, version.number, problems) if problems else []
    problems = entry_problems(entry.kind, entry.key, label, version)
    return entry_refusal(entry.key, label, version.number, problems) if problems else []


def entry_refusal(key: str, label: str, version_number: int, problems: list[str]) -> list[str]:
    """The refusal's lines for an entry's own release on `label`."""
    head = _("v%(number)s of %(key)s cannot be served on '%(label)s': the snippets it includes there use "
             "arguments it does not provide. Declare them (and publish again), or pin the snippets to the version "
             "it was written for with {{> name@N }}.") % {"number": version_number, "key": key, "label": label}
    return [head, *problems[:SHOWN]]


def refusal(snippet_name: str, label: str, version_number: int, problems: list[str]) -> list[str]:
    """The refusal's lines: what was refused and why, the first SHOWN problems, the count beyond."""
    head = _("v%(number)s of the snippet '%(name)s' cannot be served on '%(label)s': entries that include it "
             "could not fill its placeholders. Declare the arguments in those entries first (and publish them), "
             "or pin them to the version they use with {{> %(name)s@N }}.") % {
        "number": version_number, "name": snippet_name, "label": label}
    more = [_("... and %(count)s more.") % {"count": len(problems) - SHOWN}] if len(problems) > SHOWN else []
    return [head, *problems[:SHOWN], *more]
