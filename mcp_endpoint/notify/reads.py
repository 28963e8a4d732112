"""What the notification side reads of the registry: the one module of notify/ that names it.

The hub refreshes catalogs by the changed keys and checks them against what the database
serves; the diff asks which version a viewer is served and which built-in dynamic resources a
change alters; the intake and the replay read the change log (its queries are below); a
revocation drops the registry's cached token answers. Nothing here writes but the change log's
pruning.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

# One name a line, so that a registry module's new path is one line to change.
# isort: off
from registry.catalog import Catalog
from registry.catalog import Viewer
from registry.catalog import cached_catalog
from registry.catalog import catalog_for
from registry.catalog import forget_catalogs
from registry.catalog import held_labels
from registry.catalog import refresh_catalog
from registry.changes import Change
from registry.changes import ChangeBatch
from registry.changes import bump_generation
from registry.clients import forget_cached_tokens
from registry.consistency import served_fingerprint
from registry.consistency import stale_keys
from registry.dynamic import affected_uris
from registry.dynamic import visible
from registry.models import PRODUCTION
from registry.models import ChangeLogEntry
from registry.signals import credentials_changed
from registry.signals import registry_changed
from registry.viewer import may_differ_by_client
from registry.viewer import served_item
from registry.warmup import warm
# isort: on

from ..settings import mcp_settings

__all__ = [
    "PRODUCTION", "Catalog", "Change", "ChangeBatch", "Viewer", "affected_uris", "bump_generation",
    "cached_catalog", "catalog_for", "change_log_bounds", "change_rows_after", "changes_after",
    "changes_wanted", "credentials_changed", "forget_cached_tokens", "forget_catalogs", "held_labels",
    "may_differ_by_client", "prune_change_log", "recent_ids", "refresh_catalog", "registry_changed",
    "served_fingerprint", "served_item", "stale_keys", "visible", "warm",
]


# ------------------------------------------------------------------ the change log


def recent_ids(window: int) -> tuple[int, list[int]]:
    """The newest change-log id and the ids present in the ``window`` below it."""
    top = ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
    present = list(ChangeLogEntry.objects.filter(id__gt=top - window).values_list("id", flat=True))
    return top, present


def _row(r: ChangeLogEntry) -> Change:
    return Change(r.id, r.entry_kind, r.entry_key, r.label, r.list_changed)


def changes_after(after_id: int) -> list[Change]:
    rows = ChangeLogEntry.objects.filter(id__gt=after_id).order_by("id")[:5000]
    return [_row(r) for r in rows]


def changes_wanted(after_id: int, gaps: list[int]) -> list[Change]:
    """Rows after ``after_id`` (at most 5,000 per call) and the rows of any ``gaps`` now present."""
    found = changes_after(after_id)
    for start in range(0, len(gaps), 500):
        found.extend(_row(r) for r in ChangeLogEntry.objects.filter(id__in=gaps[start:start + 500]))
    return sorted(found, key=lambda c: c.id)


def change_log_bounds() -> tuple[int | None, int | None]:
    """The oldest and the newest id in the change log (None, None when it is empty)."""
    ids = ChangeLogEntry.objects.order_by("id").values_list("id", flat=True)
    return ids.first(), ids.last()


def change_rows_after(after: int, limit: int) -> list[tuple[str, str, str, bool]]:
    """(kind, key, label, list_changed) of the rows after ``after``, at most ``limit``."""
    return list(ChangeLogEntry.objects.filter(id__gt=after).order_by("id")
                .values_list("entry_kind", "entry_key", "label", "list_changed")[:limit])


def prune_change_log() -> int:
    cutoff = timezone.now() - timedelta(seconds=float(mcp_settings.CHANGE_LOG_RETENTION_SECONDS))
    deleted, _ = ChangeLogEntry.objects.filter(created_at__lt=cutoff).delete()
    return deleted
