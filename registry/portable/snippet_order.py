"""The order an import writes a file's snippets in, and the circles they form among themselves.

A snippet must be published before one that includes it, so the importer writes each snippet after
the snippets of the same file it includes. Both walks are iterative: a file may hold thousands of
snippets each including the next, and a recursive walk would exhaust Python's stack long before
validation could refuse the chain as too deep. A circle among the file's snippets is found here,
from the file's texts, because validation reads the registry and would see only that the other
snippet of the circle does not exist (or has no version) yet.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

from django.utils.translation import gettext as _

from registry.authoring.validation import DraftReport, Problem, check_references
from registry.errors import TemplateSyntaxError
from registry.formats.references import REFERENCE, references_in
from registry.portable.check import EntrySpec


@dataclass(frozen=True)
class Circle:
    """A snippet of the file that leads back to itself: the reference's line and the path, e.g. a → b → a."""

    line: int
    path: tuple[str, ...]


def _included(specs: list[Any]) -> dict[str, list[tuple[str, int]]]:
    """Snippet name -> the (name, line) of the file's snippets its text includes, in text order."""
    by_name = {s.key for s in specs if isinstance(s, EntrySpec)}
    graph: dict[str, list[tuple[str, int]]] = {}
    for spec in specs:
        if not isinstance(spec, EntrySpec):
            continue
        try:
            refs = references_in(spec.data.get("text") or "")
        except (TemplateSyntaxError, TypeError):
            refs = []  # reported by the placeholder check with its line
        graph[spec.key] = [(ref.name, ref.line) for ref in refs if ref.name in by_name]
    return graph


def included_first(specs: list[Any]) -> list[Any]:
    """The file's snippets ordered so that each comes after the snippets of the file it includes
    (so one import can publish both); a circle keeps the file's order, and validation refuses it."""
    graph = _included(specs)
    by_key = {s.key: s for s in specs}
    ordered: dict[str, Any] = {}
    visiting: set[str] = set()
    for start in specs:
        if start.key in ordered:
            continue
        visiting.add(start.key)
        stack: list[tuple[str, int]] = [(start.key, 0)]  # (snippet, index of the next include to visit)
        while stack:
            key, index = stack[-1]
            includes = graph.get(key, [])
            if index < len(includes):
                stack[-1] = (key, index + 1)
                name = includes[index][0]
                if name not in ordered and name not in visiting:
                    visiting.add(name)
                    stack.append((name, 0))
                continue
            stack.pop()
            visiting.discard(key)
            ordered[key] = by_key[key]
    return list(ordered.values())


def circles(specs: list[Any]) -> dict[str, Circle]:
    """The file's snippets that include themselves through the file's snippets, each with its
    shortest way back. Snippets that lead to no circle are set aside first (peeled from the end of
    each chain), so a long chain costs one visit per snippet."""
    graph = _included(specs)
    remaining = {key: {name for name, _line in includes} for key, includes in graph.items()}
    included_by: dict[str, set[str]] = {}
    for key, names in remaining.items():
        for name in names:
            included_by.setdefault(name, set()).add(key)
    ends = deque(key for key, names in remaining.items() if not names)
    while ends:
        key = ends.popleft()
        for user in included_by.get(key, ()):
            left = remaining.get(user)
            if left is not None and key in left:
                left.discard(key)
                if not left:
                    ends.append(user)
        remaining.pop(key, None)
    found: dict[str, Circle] = {}
    for start in remaining:
        came_from: dict[str, tuple[str, int]] = {}  # snippet -> (the one including it, line of start's include)
        queue: deque[str] = deque()
        for name, line in graph[start]:
            if name in remaining and name not in came_from:
                came_from[name] = (start, line)
                queue.append(name)
        while queue and start not in came_from:
            key = queue.popleft()
            for name, _line in graph[key]:
                if name in remaining and name not in came_from:
                    came_from[name] = (key, came_from[key][1])
                    queue.append(name)
        if start in came_from:
            path = [start]
            step = came_from[start][0]
            while step != start:
                path.append(step)
                step = came_from[step][0]
            path.append(start)
            found[start] = Circle(came_from[start][1], tuple(reversed(path)))
    return found


def circled(report: DraftReport, text: str, own: str, circle: Circle) -> None:
    """Say that `own` is in `circle` instead of what validation, reading the registry, said of the
    reference that starts it (that the next snippet does not exist, or has no version, yet); the
    text's other references keep their problems."""
    reason = _("the snippets include each other in a circle (%(path)s).") % {"path": " → ".join(circle.path)}
    detail = _("Line %(line)s: %(problem)s") % {"line": circle.line, "problem": reason}
    first = circle.path[1]
    rest = REFERENCE.sub(lambda match: "" if match.group(1) == first else match.group(0), text)
    others = DraftReport()
    check_references(rest, _("Text"), others, place="text", own=own)
    kept = [e for e in report.errors if e.code != "snippet_reference"]
    report.errors[:] = [*kept, Problem(_("%(where)s: %(problem)s") % {"where": _("Text"), "problem": detail},
                                       code="snippet_reference", where="text", detail=detail),
                        *(e for e in others.errors if e.code == "snippet_reference")]
