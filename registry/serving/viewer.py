"""Who is reading, and the one rule of what they are served.

`Viewer` is the reader (the label its client is bound to, its scope tags, its identity for
rollout buckets); `served_item` decides, for an entry's item as a catalog holds it, which
version that viewer gets, if any. Every path that answers or announces asks it: the
catalog's lists and reads, the cold pages, the client page, the change logs, the replay of
a resumed stream and the notification hub.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from registry.formats.buckets import gets_candidate
from registry.models.base import PRODUCTION


@dataclass(frozen=True)
class Viewer:
    """Who is reading: decides the label served and which entries are visible."""

    label: str = PRODUCTION
    scope_tags: frozenset[str] = frozenset()  # empty: sees everything
    client_id: int | None = None
    client_name: str = ""

    def sees(self, tags: frozenset[str]) -> bool:
        return not self.scope_tags or bool(self.scope_tags & tags)


def served_item(item: Any, viewer: Viewer) -> Any:
    """The one rule of what a viewer is served of an entry: `item` is the label's version (with
    any rollout running on it); a viewer whose stable bucket is in the rollout gets the
    candidate instead; and the version served is visible only if *its own* tags admit the
    viewer. None: the viewer is served nothing of this entry.

    Lists, single reads, completions, the cold pages, the client page, the change logs and the
    notification hub all ask this function, so they cannot disagree (a rollout candidate
    retagged for another audience is never served to this one)."""
    if item is None:
        return None
    if in_bucket(item, viewer):
        item = item.rollout.candidate
    return item if viewer.sees(item.tags) else None


def in_bucket(item: Any, viewer: Viewer) -> bool:
    """Whether a rollout runs on `item` and `viewer`'s stable bucket for it (by the key the label
    serves it under, never the draft's; a snippet's rollout by the snippet's name) falls in its
    share: the one bucket test of serving."""
    rollout = getattr(item, "rollout", None)
    return rollout is not None and gets_candidate(viewer.client_name, rollout.bucket_key(item.key), rollout.percent)


def may_differ_by_client(item: Any, viewer: Viewer) -> bool:
    """Whether clients sharing `viewer`'s label and scope may be served `item` differently: a rollout
    runs on it and the viewer could see its label version or its candidate."""
    rollout = getattr(item, "rollout", None)
    return rollout is not None and (viewer.sees(item.tags) or viewer.sees(rollout.candidate.tags))
