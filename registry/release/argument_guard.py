"""Refuse a snippet release that would serve a dependent placeholders it cannot fill.

A prompt declares the arguments of the snippets it includes when it is saved, against the
versions those snippets may serve then (registry/authoring/reference_checks.py). A snippet version
released later may use an argument its followers do not declare; served as is, the placeholder
renders empty ("Be ." where "Be {{ mood }}." was meant) and every client of every follower gets
broken text with no error anywhere. So moving a snippet's label (publish, move, rollback, an
approved review, a scheduled release: all pass `services._point_label`) first resolves every
dependent served from that label row as it would be served after the move, with the serving rule
itself (registry/serving/composed.py `SnippetMaps.parts`), and checks the arguments of each
snippet version it newly reaches with the save rule (`argument_gap`). Only what the move
changes is judged: a dependent's older gap is not this release's to refuse.
"""

from __future__ import annotations

from typing import Any

from django.utils.translation import gettext as _

from registry.authoring.reference_checks import argument_gap
from registry.errors import InvalidUri
from registry.formats.uris import template_variable_names
from registry.kinds import KINDS
from registry.models import SnippetVersion
from registry.serving.composed import SnippetMaps, read_snippet_maps

SHOWN = 20  # problems named in the refusal; the count says how many more


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


def release_problems(snippet_name: str, label: str, version: Any,
                     dependents: list[tuple[str, str, str]]) -> list[str]:
    """Why serving `version` of `snippet_name` on `label` would leave the (kind, key, label row)
    `dependents` with placeholders they cannot fill, one line each; empty: the release may go."""
    problems: list[str] = []
    arguments = _Arguments()
    by_row: dict[str, list[tuple[str, str]]] = {}
    for kind, key, row in dependents:
        by_row.setdefault(row, []).append((kind, key))
    for row, entries in sorted(by_row.items()):
        before = read_snippet_maps(row)
        after = _moved(before, label, snippet_name, version)
        for kind in sorted({kind for kind, _key in entries}):
            spec = KINDS[kind]
            keys = sorted(key for k, key in entries if k == kind)
            for key, listing, snapshot in spec.label_model.objects.filter(
                    name=row, **{f"entry__{spec.key_field}__in": keys}).values_list(
                    f"entry__{spec.key_field}", "version__listing", "version__snapshot").order_by(
                    f"entry__{spec.key_field}"):
                includes = tuple((listing or {}).get("includes") or (snapshot or {}).get("includes") or ())
                new_parts = set(after.parts(row, includes)) - set(before.parts(row, includes))
                provided = _provided(kind, snapshot or {})
                for name, number in sorted(new_parts):
                    for argument in arguments.of(name, number) if number else ():
                        gap = argument_gap(kind, argument["name"], argument.get("type") or "text", name, provided)
                        if gap is not None:
                            problems.append(_("%(kind)s %(key)s (%(label)s): %(gap)s") % {
                                "kind": kind, "key": key, "label": row, "gap": gap})
    return problems


def refusal(snippet_name: str, label: str, version_number: int, problems: list[str]) -> list[str]:
    """The refusal's lines: what was refused and why, the first SHOWN problems, the count beyond."""
    head = _("v%(number)s of the snippet '%(name)s' cannot be served on '%(label)s': entries that include it "
             "could not fill its placeholders. Declare the arguments in those entries first (and publish them), "
             "or pin them to the version they use with {{> %(name)s@N }}.") % {
        "number": version_number, "name": snippet_name, "label": label}
    more = [_("... and %(count)s more.") % {"count": len(problems) - SHOWN}] if len(problems) > SHOWN else []
    return [head, *problems[:SHOWN], *more]
