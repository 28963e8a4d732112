"""Checks of a draft's `{{> name }}` references, run with the rest of validation at save, import and publish.

A reference must name a snippet that exists, is not archived and has a published version (a pinned
one: that version); following the references of the snippets it includes (their pinned versions,
else their newest: what any label may come to serve) must end within MAX_DEPTH levels and never
lead back to the snippet being edited. The arguments of every snippet reached are what the
including entry must provide: a prompt declares each, with the same type; a resource has none to
give, so it may only include snippets without arguments; a template gives its URI variables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.utils.translation import gettext as _

from registry.errors import TemplateSyntaxError
from registry.formats.references import MAX_DEPTH, Reference, parse_spelled, references_in
from registry.models import Snippet, SnippetVersion


@dataclass
class Reached:
    """What a text's references reach: the arguments they need, and their problems as (line, reason)."""

    arguments: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (type, snippet)
    problems: list[tuple[int, str]] = field(default_factory=list)


class _Versions:
    """Published snippet snapshots, read once per validation."""

    def __init__(self) -> None:
        self.snippets: dict[str, Snippet | None] = {}
        self.snapshots: dict[tuple[str, int | None], dict[str, Any] | None] = {}

    def snippet(self, name: str) -> Snippet | None:
        if name not in self.snippets:
            self.snippets[name] = Snippet.objects.filter(name=name).first()
        return self.snippets[name]

    def snapshot(self, snippet: Snippet, pinned: int | None) -> dict[str, Any] | None:
        key = (snippet.name, pinned)
        if key not in self.snapshots:
            versions = SnippetVersion.objects.filter(entry=snippet)
            version = (versions.filter(number=pinned) if pinned else versions.order_by("-number")).first()
            self.snapshots[key] = version.snapshot if version is not None else None
        return self.snapshots[key]


def _problem(ref: Reference, snippet: Snippet | None, pinned_snapshot: dict[str, Any] | None) -> str | None:
    if snippet is None:
        return _("the snippet '%(name)s' does not exist; check the spelling or create it first.") % {"name": ref.name}
    if snippet.archived_at is not None:
        return _("the snippet '%(name)s' is archived; restore it or remove the reference.") % {"name": ref.name}
    if pinned_snapshot is None and ref.pinned:
        return _("the snippet '%(name)s' has no version %(number)s.") % {"name": ref.name, "number": ref.pinned}
    if pinned_snapshot is None:
        return _("the snippet '%(name)s' has no published version yet; publish it first.") % {"name": ref.name}
    return None


def reached_by(text: str, *, own: str | None = None) -> Reached:
    """Follow the references of `text` (a draft's text; `own`: the name of the snippet being edited)."""
    reached = Reached()
    try:
        top = references_in(text)
    except TemplateSyntaxError:
        return reached  # reported by the placeholder check with its line
    versions = _Versions()
    for ref in top:
        _follow(ref, ref.line, (own,) if own else (), 1, versions, reached)
    return reached


def _follow(ref: Reference, line: int, trail: tuple[str, ...], depth: int, versions: _Versions,
            reached: Reached) -> None:
    if ref.name in trail:
        path = " → ".join((*trail[trail.index(ref.name):], ref.name))
        reached.problems.append((line, _("the snippets include each other in a circle (%(path)s).") % {"path": path}))
        return
    if depth > MAX_DEPTH:
        reached.problems.append((line, _("snippets are included more than %(max)s levels deep; include fewer "
                                         "levels.") % {"max": MAX_DEPTH}))
        return
    snippet = versions.snippet(ref.name)
    snapshot = versions.snapshot(snippet, ref.pinned) if snippet is not None else None
    problem = _problem(ref, snippet, snapshot)
    if problem is not None:
        if depth == 1:  # deeper problems are the included snippet's, reported when it was published
            reached.problems.append((line, problem))
        return
    assert snapshot is not None
    for argument in snapshot.get("arguments") or ():
        reached.arguments.setdefault(argument["name"], (argument.get("type") or "text", ref.name))
    for spelled in snapshot.get("includes") or ():
        _follow(parse_spelled(spelled), line, (*trail, ref.name), depth + 1, versions, reached)
