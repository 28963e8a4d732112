"""An audit entry's recorded changes ([{field, before, after}]) -> an EntryDiff, and its one-line summary.

The audit log keeps changed keys only, by dotted path; they are rebuilt into the two partial
snapshots `build` compares, marked partial so unchanged parts read as unknown, not "not set".
"""

from __future__ import annotations

import re
from typing import Any

from registry.admin.diff.changes import EntryDiff
from registry.admin.diff.sections import build
from registry.authoring.snapshots import Loader

_STEP = re.compile(r"([^.\[\]]+)(?:\[(\d+)\])?")


def _unflatten(changes: list[dict[str, Any]], side: str) -> dict[str, Any]:
    """{'messages[2].content.text': x} -> {'messages': {2: {'content': {'text': x}}}} for one side."""
    root: dict[Any, Any] = {}
    for change in changes:
        path, value = str(change.get("field", "")), change.get(side)
        if value is None or not path:
            continue
        steps: list[Any] = []
        for match in _STEP.finditer(path):
            steps.append(match.group(1))
            if match.group(2) is not None:
                steps.append(int(match.group(2)))
        node = root
        for step in steps[:-1]:
            if not isinstance(node.get(step), dict):
                node[step] = {}
            node = node[step]
        if not isinstance(node.get(steps[-1]), dict) or not isinstance(value, list):
            node[steps[-1]] = value
    return root


def from_changes(kind: str, changes: list[dict[str, Any]] | None, *, before_name: str = "before",
                 after_name: str = "after", load: Loader | None = None) -> EntryDiff:
    """The readable diff of an audit entry's recorded field changes ([{field, before, after}]).

    Texts up to DIFF_TEXT_LIMIT are in the record; `load` reads longer ones (by their recorded hash)."""
    changes = [c for c in (changes or []) if isinstance(c, dict)]
    return build(kind, _unflatten(changes, "before"), _unflatten(changes, "after"),
                 before_name=before_name, after_name=after_name, partial=True, load=load)


def change_summary(kind: str, changes: list[dict[str, Any]] | None) -> str:
    """The one-line summary of an audit entry's recorded changes ("" when it recorded none)."""
    return from_changes(kind, changes).summary() if changes else ""
