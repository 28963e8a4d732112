"""Entries with their snippets expanded, read from the database: for previews, diffs and reviews.

Serving expands from the label's catalog (registry/serving/); the pages that show what a
release of a snippet changes downstream, a draft's preview and validation expand from the
database with a `Resolver` made here. The rule of which version a reference gets is one:
`{{> name@3 }}` is version 3; `{{> name }}` is the snippet version on the label the including
entry is served from, else on production (the label fallback clients get,
registry/serving/items.py `fallback_names`); `overrides` stands in a candidate version for a
snippet (what a release would serve) without publishing anything.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from registry.authoring.snapshots import Loader, materialise, read_content, with_content
from registry.formats.references import Resolver, expand
from registry.models import PRODUCTION, SnippetLabel, SnippetVersion


def snippet_version_text(name: str, number: int) -> str | None:
    snapshot = SnippetVersion.objects.filter(entry__name=name, number=number).values_list(
        "snapshot", flat=True).first()
    return None if snapshot is None else snapshot.get("text", "")


def served_snippet_number(name: str, label: str) -> int | None:
    """The version number of snippet `name` that label `label` serves (production's where it has none)."""
    rows = dict(SnippetLabel.objects.filter(entry__name=name, name__in={label, PRODUCTION}).of_unarchived_entries()
                .values_list("name", "version__number"))
    return rows.get(label, rows.get(PRODUCTION))


def db_resolver(label: str, overrides: Mapping[str, int] | None = None) -> Resolver:
    """A Resolver for an entry served from `label`; `overrides` maps snippet names to the version a
    following reference gets instead (a release being reviewed). Caches what it reads."""
    found: dict[tuple[str, int | None], str | None] = {}

    def resolve(name: str, pinned: int | None) -> str | None:
        key = (name, pinned)
        if key not in found:
            number = pinned if pinned is not None else (overrides or {}).get(name)
            if number is None:
                number = served_snippet_number(name, label)
            found[key] = None if number is None else snippet_version_text(name, number)
        return found[key]

    return resolve


def expanded_messages(messages: Iterable[Mapping[str, Any]], expand_text: Callable[[str], str],
                      load: Loader) -> list[dict[str, Any]]:
    """A prompt snapshot's messages as a client is served their texts: each text block's text, and
    the text of each embedded registry resource whose version includes snippets (its block's
    `includes`, registry/authoring/snapshots.py), through `expand_text`; such a resource block is
    inlined (its text read with `load`), every other block is as stored. The one rule of which
    texts of a prompt are expanded, for serving (registry/serving/composed.py) and for the pages
    that show what a client is served (`expand_snapshot`)."""
    out = []
    for message in messages:
        block = message.get("content") or {}
        if block.get("type") == "text":
            message = {**message, "content": {**block, "text": expand_text(block.get("text", ""))}}
        elif block.get("type") == "resource" and block.get("includes"):
            resource = materialise(block["resource"], load)
            if isinstance(resource.get("text"), str):
                resource["text"] = expand_text(resource["text"])
            message = {**message, "content": {"type": "resource", "resource": resource}}
        out.append(dict(message))
    return out


def expand_snapshot(kind: str, snapshot: Mapping[str, Any], resolve: Resolver,
                    load: Loader = read_content) -> dict[str, Any]:
    """`snapshot` with its documents inlined (with_content) and every text's references expanded:
    what a client is served of it, placeholders still unrendered. Raises ExpansionError."""
    if kind == "prompt" and snapshot.get("includes"):
        snapshot = {**snapshot, "messages": expanded_messages(snapshot.get("messages") or (),
                                                              lambda text: expand(text, resolve), load)}
    out = with_content(dict(snapshot), load)
    if not snapshot.get("includes") or kind == "prompt":
        return out
    if kind == "template":
        out["body"] = expand(out.get("body", ""), resolve)
    elif kind in ("resource", "snippet") and isinstance(out.get("text"), str):
        out["text"] = expand(out["text"], resolve)
    return out
