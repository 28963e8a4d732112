"""What the notification side reads of the registry: the one module of notify/ that names it.

The hub refreshes catalogs by the changed keys and checks them against what the database
serves; the diff asks which version a viewer is served and which built-in dynamic resources a
change alters; the intake and the replay read the change log (its queries are below); a
revocation drops the registry's cached token answers. The change log is the registry's
(registry/changes.py: written, read back, pruned); nothing here writes but its pruning.
"""

from __future__ import annotations

# One name a line, so that a registry module's new path is one line to change.
# isort: off
from registry.serving.catalog import Catalog
from registry.serving.viewer import Viewer
from registry.serving.catalogs import cached_catalog
from registry.serving.catalogs import catalog_for
from registry.serving.catalogs import forget_catalogs
from registry.serving.catalogs import held_labels
from registry.serving.catalogs import refresh_catalog
from registry.changes import Change
from registry.changes import ChangeBatch
from registry.changes import bump_generation
from registry.changes import change_log_bounds
from registry.changes import change_rows_after
from registry.changes import changes_after
from registry.changes import changes_wanted
from registry.changes import prune_change_log
from registry.changes import recent_ids
from registry.serving.clients import forget_cached_tokens
from registry.serving.consistency import followers
from registry.serving.consistency import parts_behind
from registry.serving.consistency import repairs
from registry.serving.consistency import served_fingerprint
from registry.serving.consistency import stale_keys
from registry.serving.dynamic import affected_uris
from registry.serving.dynamic import visible
from registry.models import PRODUCTION
from registry.signals import credentials_changed
from registry.signals import registry_changed
from registry.serving.viewer import may_differ_by_client
from registry.serving.viewer import served_item
from registry.serving.warmup import warm
from registry.serving.yielding import awaiting_build
# isort: on

__all__ = [
    "PRODUCTION", "Catalog", "Change", "ChangeBatch", "Viewer", "affected_uris", "awaiting_build",
    "bump_generation",
    "cached_catalog", "catalog_for", "change_log_bounds", "change_rows_after", "changes_after",
    "changes_wanted", "credentials_changed", "followers", "forget_cached_tokens", "forget_catalogs",
    "held_labels", "may_differ_by_client", "parts_behind", "prune_change_log", "recent_ids", "refresh_catalog",
    "registry_changed", "repairs", "served_fingerprint", "served_item", "stale_keys", "visible", "warm",
]
