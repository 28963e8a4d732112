"""Checks of a draft's `{{> name }}` references, run with the rest of validation at save, import and publish.

A reference must name a snippet that exists, is not archived and has a published version (a pinned
one: that version); following the references of the snippets it includes (their pinned versions,
else their newest: what the author writes for) must end within MAX_DEPTH levels and never lead
back to the snippet being edited. The arguments of every snippet reached are what the including
entry must provide: a prompt declares each, with the same type; a resource has none to give, so it
may only include snippets without arguments; a template gives its URI variables. Where the entry
is released, each label's own snippet versions are judged again (registry/release/argument_guard.py).
"""

from __future__ import annotations

from collections.abc import Mapping
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
        self.snapshots: dict[tuple[str, int | None], list[dict[str, Any]]] = {}

    def snippet(self, name: str) -> Snippet | None:
        if name not in self.snippets:
            self.snippets[name] = Snippet.objects.filter(name=name).first()
        return self.snippets[name]

    def snapshots_of(self, snippet: Snippet, pinned: int | None) -> list[dict[str, Any]]:
        """The version a reference is judged by: the pinned one, or for a following reference the
        newest (what the author writes for; each label's own version is judged where the entry is
        released to it: registry/release/argument_guard.py). Empty: none to serve."""
        key = (snippet.name, pinned)
        if key not in self.snapshots:
            versions = SnippetVersion.objects.filter(entry=snippet)
            version = (versions.filter(number=pinned) if pinned else versions.order_by("-number")).first()
            self.snapshots[key] = [version.snapshot or {}] if version is not None else []
        return self.snapshots[key]


def _problem(ref: Reference, snippet: Snippet | None, snapshots: list[dict[str, Any]]) -> str | None:
    if snippet is None:
        return _("the snippet '%(name)s' does not exist; check the spelling or create it first.") % {"name": ref.name}
    if snippet.archived_at is not None:
        return _("the snippet '%(name)s' is archived; restore it or remove the reference.") % {"name": ref.name}
    if not snapshots and ref.pinned:
        return _("the snippet '%(name)s' has no version %(number)s.") % {"name": ref.name, "number": ref.pinned}
    if not snapshots:
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
    snapshots = versions.snapshots_of(snippet, ref.pinned) if snippet is not None else []
    problem = _problem(ref, snippet, snapshots)
    if problem is not None:
        if depth == 1:  # deeper problems are the included snippet's, reported when it was published
            reached.problems.append((line, problem))
        return
    for snapshot in snapshots:
        for argument in snapshot.get("arguments") or ():
            reached.arguments.setdefault(argument["name"], (argument.get("type") or "text", ref.name))
    for spelled in dict.fromkeys(spelled for snapshot in snapshots for spelled in snapshot.get("includes") or ()):
        _follow(parse_spelled(spelled), line, (*trail, ref.name), depth + 1, versions, reached)


def argument_gap(kind: str, name: str, needed_type: str, snippet: str, provided: Mapping[str, str]) -> str | None:
    """Why an entry of `kind` cannot fill the argument `name` (of type `needed_type`) that the
    snippet `snippet` it includes uses, or None when it can: the rule at save, import and publish
    (registry/authoring/validation.py) and at a snippet's release (registry/release/argument_guard.py).

    `provided` is what the entry fills placeholders from: a prompt's or snippet's declared
    arguments (name -> type), a template's URI variables (name -> "text"; none known: no check,
    the URI template's own error is reported), a resource's nothing."""
    values = {"snippet": snippet, "name": name, "type": needed_type}
    if kind == "resource":
        return _("the snippet '%(snippet)s' uses the argument '%(name)s', but a resource has no arguments to fill "
                 "it with: include only snippets without arguments.") % values
    if kind == "template":
        if not provided or name in provided:
            return None
        return _("the snippet '%(snippet)s' uses the argument '%(name)s', which is not a variable of the URI "
                 "template.") % values
    if name not in provided:
        return _("the snippet '%(snippet)s' uses the argument '%(name)s'; declare an argument of that name "
                 "(type %(type)s).") % values
    if (provided[name] or "text") != needed_type:
        return _("the snippet '%(snippet)s' needs the argument '%(name)s' to be of type %(type)s, not "
                 "%(declared)s.") % {**values, "declared": provided[name] or "text"}
    return None
