"""Snippet references inside texts: `{{> name }}` follows a label, `{{> name@3 }}` pins version 3.

Pure, like registry/formats/rendering.py: no ORM. Expansion replaces each reference by the
snippet's text (recursively, at most MAX_DEPTH levels, never in a cycle) before the expanded
text is parsed for `{{ argument }}` placeholders and rendered in one pass; an argument's value
is inserted after expansion, so a value that looks like `{{> other }}` is never expanded.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from registry.errors import TemplateSyntaxError

MAX_DEPTH = 5  # a text's snippets may include snippets, five levels deep at most
SNIPPET_NAME = r"[A-Za-z0-9_.\-]{1,128}"
REFERENCE = re.compile(r"\{\{>\s*(" + SNIPPET_NAME + r")(?:@([0-9]+))?\s*\}\}")
OPENING = "{{>"  # a text without it holds no reference
_OPENED = re.compile(re.escape(OPENING))


@dataclass(frozen=True, order=True)
class Reference:
    name: str
    pinned: int | None  # None: the version served on the including entry's label
    line: int = 0

    @property
    def spelled(self) -> str:
        """How an editor writes it: 'house-style' or 'house-style@3'."""
        return f"{self.name}@{self.pinned}" if self.pinned else self.name


def references_in(text: str) -> list[Reference]:
    """Every reference in `text` in order, with its line; a malformed `{{>` raises TemplateSyntaxError."""
    found: list[Reference] = []
    if OPENING not in text:
        return found
    for opened in _OPENED.finditer(text):
        line = text.count("\n", 0, opened.start()) + 1
        match = REFERENCE.match(text, opened.start())
        if match is None:
            close = text.find("}}", opened.end())
            inner = text[opened.end(): close if close != -1 else opened.end() + 40].strip()
            raise TemplateSyntaxError(
                f"'{{{{> {inner} }}}}' is not a valid snippet reference: write {{{{> name }}}} to follow the label, "
                "or {{> name@3 }} for version 3.", line)
        pinned = int(match.group(2)) if match.group(2) else None
        if pinned == 0:
            raise TemplateSyntaxError("Snippet versions start at 1: write {{> name@1 }} or later.", line)
        found.append(Reference(match.group(1), pinned, line))
    return found


def spelled_references(texts: Iterable[str]) -> list[str]:
    """The distinct references of `texts`, sorted, as a snapshot's `includes` lists them."""
    return sorted({ref.spelled for text in texts for ref in references_in(text)})


def parse_spelled(spelled: str) -> Reference:
    name, _, pin = spelled.partition("@")
    return Reference(name, int(pin) if pin else None)


def without_references(text: str) -> str:
    """`text` with every reference removed: what its own placeholders are checked on."""
    return REFERENCE.sub("", text) if "{{>" in text else text


class ExpansionError(ValueError):
    """A cycle, a nesting deeper than MAX_DEPTH or a snippet that cannot be found while expanding."""


# (name, pinned) -> the snippet version's text, or None when there is none to serve.
Resolver = Callable[[str, int | None], str | None]


def expand(text: str, resolve: Resolver, *, _trail: tuple[str, ...] = ()) -> str:
    """`text` with every reference replaced by its snippet's (expanded) text."""
    if "{{>" not in text:
        return text

    def replace(match: re.Match[str]) -> str:
        name, pin = match.group(1), match.group(2)
        if name in _trail:
            raise ExpansionError(f"snippet {name!r} includes itself ({' > '.join((*_trail, name))})")
        if len(_trail) >= MAX_DEPTH:
            raise ExpansionError(f"snippets nest deeper than {MAX_DEPTH} levels ({' > '.join((*_trail, name))})")
        found = resolve(name, int(pin) if pin else None)
        if found is None:
            raise ExpansionError(f"snippet {name}{'@' + pin if pin else ''} has no version to serve")
        return expand(found, resolve, _trail=(*_trail, name))

    return REFERENCE.sub(replace, text)
