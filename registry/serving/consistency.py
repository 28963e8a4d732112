"""A cheap check that a cached catalog still matches what the database serves.

Catalogs are refreshed incrementally, one changed key at a time, so a change that never
reached a process (a change-log gap given up on, a refresh that failed half-way) would leave
its catalog stale for good. This module reads, per label, only the few columns that decide
what is served (which version of each entry, from which label row, and any running rollout;
a version's content, tags included, never changes) and compares them with a catalog's items:
any difference means "rebuild".

Composed items (registry/serving/composed.py) are compared by their inputs: the snippet version
each snippet name resolves to on this label (its row, else production's), as the catalog read them
(`Catalog.snippets`) and as the database has them (one more small query). Versions and their
includes never change, so equal snippet rows mean equal parts; a snippet change that never
reached a process shows as ("snippet", name), and the hub re-resolves and announces the entries
that follow it (`followers`). One the catalog has but listeners were never told of (a full
rebuild since) shows as the followers' parts differing between the two (`parts_behind`).
"""

from __future__ import annotations

from typing import Any

from registry.models import PromptLabel, ResourceLabel, ResourceTemplateLabel, Rollout, SnippetLabel
from registry.serving.composed import uses_any
from registry.serving.items import SNIPPET_ROLLOUT, fallback_names, pick_served, rollout_applies, snippet_of

# (kind, key) -> (version number, label row it is served from, (rollout percent, candidate) or None)
Fingerprint = dict[tuple[str, str], tuple[int, str, tuple[int, int] | None]]

# The key as the catalog has it: from the served version's snapshot (a draft may be renamed).
_MODELS = (("prompt", PromptLabel, "version__snapshot__name"), ("resource", ResourceLabel, "version__snapshot__uri"),
           ("template", ResourceTemplateLabel, "version__snapshot__uriTemplate"))


def served_fingerprint(label: str) -> Fingerprint:
    """What the database says `label` serves, in the catalog's terms (sync; four small queries)."""
    names = fallback_names(label)
    out: Fingerprint = {}
    keys: dict[tuple[str, int], str] = {}  # (kind, entry id) -> the key its item is served under
    for kind, model, key_field in _MODELS:
        rows = (model.objects.filter(name__in=names).of_unarchived_entries()
                .order_by("entry_id", "name")
                .values_list("entry_id", "name", key_field, "version__number", named=True))
        for entry_id, row in pick_served(rows, label).items():
            key = row[2]
            out[(kind, key)] = (row.version__number, row.name, None)
            keys[(kind, entry_id)] = key
    # Rollouts by entry id, as the catalog attaches them: the row's entry_key is the draft's name
    # when the rollout began, not necessarily the key the label serves.
    for kind, entry_id, rollout_label, candidate, percent in Rollout.objects.filter(label__in=names).values_list(
            "entry_kind", "entry_id", "label", "candidate_version", "percent"):
        key = keys.get((kind, entry_id))
        served = out.get((kind, key)) if key is not None else None
        if key is None or served is None or not rollout_applies(served[1], served[0], rollout_label, candidate):
            continue
        out[(kind, key)] = (*served[:2], (percent, candidate))
    snippet_rows: list[Any] = list(SnippetLabel.objects.filter(name__in=names).of_unarchived_entries()
                        .order_by("entry_id", "name").values_list("entry_id", "name", "entry__name",
                                                                  "version__number", named=True))
    for row in pick_served(snippet_rows, label).values():
        out[("snippet", row.entry__name)] = (row.version__number, row.name, None)
    # A snippet's rollout, as the catalog carries it: on a label row that serves the snippet another version.
    serving = {(row.entry__name, row.name): row.version__number for row in snippet_rows}
    for name, rollout_label, candidate, percent in Rollout.objects.filter(
            label__in=names, entry_kind="snippet").values_list("entry_key", "label", "candidate_version", "percent"):
        if serving.get((name, rollout_label), candidate) != candidate:
            out[(SNIPPET_ROLLOUT, f"{name}@{rollout_label}")] = (candidate, rollout_label, (percent, candidate))
    return out


def catalog_fingerprint(catalog: Any) -> Fingerprint:
    """The same facts as :func:`served_fingerprint`, read from a built catalog."""
    out: Fingerprint = {}
    pools = (("prompt", catalog.prompt_items.values()), ("resource", catalog.resource_items.values()),
             ("template", catalog.template_items))
    for kind, items in pools:
        for item in items:
            rollout = getattr(item, "rollout", None)
            own = rollout if rollout is not None and not rollout.snippet else None  # a snippet's is the snippet's fact
            running = (own.percent, own.candidate.version) if own is not None else None
            out[(kind, item.key)] = (item.version, item.label, running)
    maps = getattr(catalog, "snippets", None)
    if maps is not None:
        for row in reversed(fallback_names(maps.label)):  # the label's own rows win over production's
            for name, (number, _includes) in maps.rows.get(row, {}).items():
                out[("snippet", name)] = (number, row, None)
        for name, row, candidate, percent in getattr(catalog, "snippet_rollouts", ()):
            out[(SNIPPET_ROLLOUT, f"{name}@{row}")] = (candidate, row, (percent, candidate))
    return out


def stale_keys(catalog: Any, served: Fingerprint) -> list[tuple[str, str]]:
    """The (kind, key) pairs on which `catalog` and the database disagree (empty: consistent)."""
    built = catalog_fingerprint(catalog)
    if getattr(catalog, "snippets", None) is None:  # it resolved no reference: the snippet rows are not its input
        served = {key: value for key, value in served.items() if key[0] not in ("snippet", SNIPPET_ROLLOUT)}
    return sorted(k for k in set(built) | set(served) if built.get(k) != served.get(k))


def repairs(stale: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The changes that bring the stale (kind, key) pairs up to date, each once: a snippet's
    rollout on a label row is a change of the snippet (its rollouts are read with its rows)."""
    return list(dict.fromkeys((("snippet", snippet_of(kind, key)) if kind == SNIPPET_ROLLOUT else (kind, key))
                              for kind, key in stale))


def _parts(item: Any) -> tuple[Any, Any]:
    rollout = getattr(item, "rollout", None)
    return getattr(item, "parts", ()), getattr(rollout.candidate, "parts", ()) if rollout is not None else None


def parts_behind(told: Any, catalog: Any) -> list[tuple[str, str]]:
    """The (kind, key) of composed entries that `told` (what listeners were last told) records
    with other snippet versions than `catalog` serves them with, the entry's own version the same:
    a snippet change they were never told of, though the catalog has it (rebuilt since)."""
    found = []
    pools = (("prompt", told.prompt_items, catalog.prompt_items),
             ("resource", told.resource_items, catalog.resource_items),
             ("template", {t.uri_template: t for t in told.template_items},
              {t.uri_template: t for t in catalog.template_items}))
    for kind, before, now in pools:
        for key, item in before.items():
            current = now.get(key)
            if (current is not None and current.version == item.version and current.label == item.label
                    and _parts(current) != _parts(item)):
                found.append((kind, key))
    return sorted(found)


def followers(records: Any, names: set[str]) -> list[tuple[str, str]]:
    """The (kind, key) of every item of the catalogs or records `records` that follows one of the
    snippets `names`: what a stale snippet row changes for listeners."""
    found: dict[tuple[str, str], None] = {}
    for record in records:
        pools = (("prompt", record.prompt_items.values()), ("resource", record.resource_items.values()),
                 ("template", record.template_items))
        for kind, items in pools:
            found.update(((kind, item.key), None) for item in items if uses_any(item, names))
    return sorted(found)
