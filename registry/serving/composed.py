"""Composed entries in a catalog: which snippet versions an item's references resolve to, and the
texts it is served with them expanded.

An entry served from label row L expands `{{> name }}` with the snippet version on L, else the
snippet's production version, and `{{> name@3 }}` with version 3 (registry/authoring/composition.py
says the same rule against the database, for previews and reviews). A catalog reads its label's
snippet rows once (`read_snippet_maps`: one query) and gives each item whose listing has `includes`
its `parts`: the (name, number) its following references resolve to, transitively through the
snippets' own includes, sorted. The parts are what the item's served text depends on beyond its
own immutable version: they are in the content cache keys of its expanded text and in the hub's
judgement of whether a listener is served something new (mcp_endpoint/notify/diff.py). A prompt's
includes hold those of the registry resources it embeds as well (each block carries its resource
version's, frozen at the prompt's publish), so its parts cover them and their texts are expanded
with the same resolver (which texts: registry/authoring/composition.py `expanded_messages`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from registry.authoring.composition import expanded_messages
from registry.authoring.snapshots import Loader
from registry.errors import RegistryError
from registry.formats.references import MAX_DEPTH, ExpansionError, Resolver, expand, parse_spelled
from registry.models import PRODUCTION, SnippetLabel, SnippetVersion
from registry.serving.items import fallback_names

Parts = tuple[tuple[str, int], ...]  # (snippet name, version number; 0: no version to serve), sorted
MISSING = 0


class SnippetUnavailable(RegistryError):
    """A served text references a snippet with no version to serve (or nests too deep): the
    client gets a clear error for that entry, the rest of the catalog is unaffected."""


@dataclass
class SnippetMaps:
    """The snippet versions one label's catalog serves: per label row name (the label and
    production), snippet name -> (version number, that version's includes)."""

    label: str
    rows: dict[str, dict[str, tuple[int, tuple[str, ...]]]]
    pinned: dict[tuple[str, int], tuple[str, ...]] = field(default_factory=dict)  # read on demand
    _memo: dict[tuple[str, tuple[str, ...]], Parts] = field(default_factory=dict)

    def number(self, served_from: str, name: str) -> int | None:
        found = self.rows.get(served_from, {}).get(name) or self.rows.get(PRODUCTION, {}).get(name)
        return found[0] if found else None

    def includes(self, name: str, number: int) -> tuple[str, ...]:
        """The includes of snippet version (name, number): from a label row when one serves it,
        else read once (a pinned version no label serves)."""
        for rows in self.rows.values():
            found = rows.get(name)
            if found and found[0] == number:
                return found[1]
        key = (name, number)
        if key not in self.pinned:
            listing = SnippetVersion.objects.filter(entry__name=name, number=number).values_list(
                "listing", flat=True).first()
            self.pinned[key] = tuple((listing or {}).get("includes") or ())
        return self.pinned[key]

    def parts(self, served_from: str, includes: Iterable[str]) -> Parts:
        """The parts of an item served from label row `served_from` whose texts include `includes`;
        equal answers are one shared tuple (many entries include the same snippets)."""
        key = (served_from, tuple(includes))
        found = self._memo.get(key)
        if found is None:
            resolved: dict[str, int] = {}
            self._walk(served_from, key[1], (), resolved)
            found = self._memo[key] = tuple(sorted(resolved.items()))
        return found

    def _walk(self, served_from: str, includes: tuple[str, ...], trail: tuple[str, ...],
              resolved: dict[str, int]) -> None:
        if len(trail) >= MAX_DEPTH:
            return
        for spelled in includes:
            ref = parse_spelled(spelled)
            if ref.name in trail:
                continue  # a cycle: expanding it is an error the client sees; nothing more to resolve
            if ref.pinned is None:
                number = self.number(served_from, ref.name)
                resolved[ref.name] = number or MISSING
                if not number:
                    continue
            else:
                number = ref.pinned
            self._walk(served_from, self.includes(ref.name, number), (*trail, ref.name), resolved)


def moved(maps: SnippetMaps, row: str, name: str, number: int) -> SnippetMaps:
    """`maps` with snippet `name` served as version `number` from label row `row`: what the
    entries following it there are expanded with in its rollout's candidate."""
    rows = {row_name: dict(found) for row_name, found in maps.rows.items()}
    rows.setdefault(row, {})[name] = (number, maps.includes(name, number))
    return SnippetMaps(maps.label, rows, maps.pinned)


def read_snippet_maps(label: str) -> SnippetMaps:
    """The snippet rows `label`'s catalog resolves from (its own and production's; one query)."""
    rows: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {name: {} for name in fallback_names(label)}
    for row_name, name, number, listing in SnippetLabel.objects.filter(
            name__in=fallback_names(label)).of_unarchived_entries().values_list(
            "name", "entry__name", "version__number", "version__listing"):
        rows[row_name][name] = (number, tuple((listing or {}).get("includes") or ()))
    return SnippetMaps(label, rows)


def uses_any(item: Any, names: set[str]) -> bool:
    """Whether `item` (or its rollout's candidate) follows one of the snippets `names`."""
    if any(name in names for name, _number in getattr(item, "parts", ())):
        return True
    rollout = getattr(item, "rollout", None)
    return rollout is not None and uses_any(rollout.candidate, names)


# ------------------------------------------------------------------------------------- expansion
def snippet_text(name: str, number: int) -> str | None:
    """Snippet version (name, number)'s text (None: no such version). Sync: a database read."""
    snapshot = SnippetVersion.objects.filter(entry__name=name, number=number).values_list(
        "snapshot", flat=True).first()
    return None if snapshot is None else snapshot.get("text", "")


def resolver(parts: Parts, load: Any = snippet_text) -> Resolver:
    """A Resolver for an item with these parts: a following reference gets its part's version, a
    pinned one its own number; `load(name, number)` gives a version's text."""
    following = dict(parts)

    def resolve(name: str, pinned: int | None) -> str | None:
        number = pinned if pinned is not None else following.get(name)
        return load(name, number) if number else None

    return resolve


def expanded(text: str, resolve: Resolver) -> str:
    """`text` with its references expanded; what cannot be expanded is a SnippetUnavailable."""
    try:
        return expand(text, resolve)
    except ExpansionError as exc:
        raise SnippetUnavailable(f"This entry cannot be served: {exc}.") from exc


def expanded_prompt(snapshot: Mapping[str, Any], resolve: Resolver, load: Loader) -> dict[str, Any]:
    """A prompt snapshot with its texts' references expanded: its text messages' and those of the
    registry resources it embeds (inlined, read with `load`); other blocks as stored."""
    if not snapshot.get("includes"):
        return dict(snapshot)
    return {**snapshot, "messages": expanded_messages(snapshot.get("messages") or (),
                                                      lambda text: expanded(text, resolve), load)}
