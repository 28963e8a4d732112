"""The inline word diff of two texts: lines matched first, then changed lines word by word.

Kept apart because it knows nothing of snapshots: any two strings in, `Segment` runs out
("same", "ins", "del", and "gap" for long unchanged stretches folded away).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable

from django.utils.translation import ngettext

from registry.admin.diff.changes import Segment

_CONTEXT_LINES = 2
_MAX_WORD_TOKENS = 2000  # above this a changed block is shown as deleted + inserted, not word by word

_TOKEN = re.compile(r"\w+|\s+|[^\w\s]", re.UNICODE)


def merge(segments: Iterable[Segment]) -> list[Segment]:
    out: list[Segment] = []
    for segment in segments:
        if not segment.text:
            continue
        if out and out[-1].op == segment.op:
            out[-1] = Segment(segment.op, out[-1].text + segment.text)
        else:
            out.append(segment)
    return out


def _opcodes(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """difflib opcodes, matching only what lies between the common head and tail.

    Most edits leave the start and end of a text alone; trimming them first keeps long texts
    fast, and difflib's junk heuristic keeps blank lines and spaces from making it quadratic.
    """
    head, limit = 0, min(len(a), len(b))
    while head < limit and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < limit - head and a[len(a) - 1 - tail] == b[len(b) - 1 - tail]:
        tail += 1
    middle = difflib.SequenceMatcher(None, a[head:len(a) - tail], b[head:len(b) - tail]).get_opcodes()
    opcodes = [("equal", 0, head, 0, head)] if head else []
    opcodes += [(tag, i1 + head, i2 + head, j1 + head, j2 + head) for tag, i1, i2, j1, j2 in middle
                if i1 != i2 or j1 != j2]
    if tail:
        opcodes.append(("equal", len(a) - tail, len(a), len(b) - tail, len(b)))
    merged: list[tuple[str, int, int, int, int]] = []
    for op in opcodes:
        if merged and merged[-1][0] == op[0] == "equal":
            merged[-1] = ("equal", merged[-1][1], op[2], merged[-1][3], op[4])
        else:
            merged.append(op)
    return merged


def _word_segments(old: str, new: str) -> list[Segment]:
    a, b = _TOKEN.findall(old), _TOKEN.findall(new)
    if len(a) > _MAX_WORD_TOKENS or len(b) > _MAX_WORD_TOKENS:
        return merge([Segment("del", old), Segment("ins", new)])
    opcodes = _opcodes(a, b)
    # A lone space between two changes reads better inside both changes: "-the quick- +a slow+".
    groups: list[tuple[str, str, str]] = []  # (op, before text, after text)
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        old_part, new_part = "".join(a[i1:i2]), "".join(b[j1:j2])
        between = 0 < index < len(opcodes) - 1
        if tag == "equal" and between and not old_part.strip():
            groups.append(("glue", old_part, new_part))
        else:
            groups.append(("equal" if tag == "equal" else "change", old_part, new_part))
    segments: list[Segment] = []
    pending_del, pending_ins = "", ""
    for op, old_part, new_part in groups:
        if op == "equal" or (op == "glue" and not (pending_del or pending_ins)):
            segments += [Segment("del", pending_del), Segment("ins", pending_ins), Segment("same", old_part)]
            pending_del = pending_ins = ""
        else:
            pending_del += old_part
            pending_ins += new_part
    segments += [Segment("del", pending_del), Segment("ins", pending_ins)]
    return merge(segments)


def word_diff(old: str | None, new: str | None, *, context_lines: int = _CONTEXT_LINES) -> list[Segment]:
    """Inline diff of two texts: lines are matched first, then changed lines word by word.

    Long unchanged stretches between changes are folded into a "gap" segment that says how many
    lines it hides, so a one-word change in a long document stays readable.
    """
    old, new = old or "", new or ""
    a, b = old.splitlines(keepends=True), new.splitlines(keepends=True)
    segments: list[Segment] = []
    opcodes = _opcodes(a, b)
    for index, (tag, i1, i2, j1, j2) in enumerate(opcodes):
        if tag == "equal":
            lines = a[i1:i2]
            head = 0 if index == 0 else context_lines
            tail = 0 if index == len(opcodes) - 1 else context_lines
            if len(opcodes) > 1 and len(lines) > head + tail + 1:
                hidden = len(lines) - head - tail
                segments.append(Segment("same", "".join(lines[:head])))
                segments.append(Segment("gap", ngettext("… %(count)s unchanged line …", "… %(count)s unchanged lines …",
                                                        hidden) % {"count": hidden}))
                segments.append(Segment("same", "".join(lines[len(lines) - tail:])))
            else:
                segments.append(Segment("same", "".join(lines)))
        elif tag == "delete":
            segments.append(Segment("del", "".join(a[i1:i2])))
        elif tag == "insert":
            segments.append(Segment("ins", "".join(b[j1:j2])))
        else:
            segments += _word_segments("".join(a[i1:i2]), "".join(b[j1:j2]))
    return merge(segments)
