"""Who got which version: figures for the admin pages, from the fetch counters and the catalog.

The counters are written in batches by `registry.serving.fetches` (never on the request path); these
functions only read them, by the key they are written under (`fetches.counters_for`). "What a
client receives now" and which clients a rollout reaches are computed by the serving rule itself
(registry/serving/viewer.py `served_item`, on the catalog's own items), never re-derived here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any

from django.db.models import Max, Sum
from django.utils import timezone

from registry.formats.buckets import stable_bucket
from registry.kinds import kind_of
from registry.models import PRODUCTION, McpClient, Rollout, VersionedEntry
from registry.serving.catalogs import entry_item, load_catalog
from registry.serving.clients import viewer_of
from registry.serving.fetches import counters_for
from registry.serving.items import ItemRollout
from registry.serving.viewer import in_bucket, served_item

RECENT_HOURS = 24


@dataclass
class ClientVersions:
    client_name: str  # "" = anonymous callers
    versions: list[dict[str, Any]] = field(default_factory=list)  # {version, label, count, first_at, last_at}
    total: int = 0
    last_at: datetime | None = None

    @property
    def latest_version(self) -> int | None:
        return max(self.versions, key=lambda v: v["last_at"])["version"] if self.versions else None


def served_by_client(entry: VersionedEntry) -> list[ClientVersions]:
    """Per client, every version of `entry` it was served, how often and when last; latest first."""
    by_client: dict[str, ClientVersions] = {}
    rows = counters_for(entry).order_by("client_name", "-version")
    for row in rows:
        summary = by_client.setdefault(row.client_name, ClientVersions(row.client_name))
        summary.versions.append({"version": row.version, "label": row.label, "count": row.count,
                                 "first_at": row.first_at, "last_at": row.last_at})
        summary.total += row.count
        summary.last_at = max(filter(None, [summary.last_at, row.last_at]))
    return sorted(by_client.values(), key=lambda s: s.last_at or timezone.now(), reverse=True)


def served_by_version(entry: VersionedEntry) -> list[dict[str, Any]]:
    """Per version: fetches, distinct clients, last fetch."""
    counters = counters_for(entry)
    rows = (counters.values("version").annotate(total=Sum("count"), last=Max("last_at")).order_by("-version"))
    out = []
    for row in rows:
        clients = (counters.filter(version=row["version"]).values("client_name").distinct().count())
        out.append({"version": row["version"], "total": row["total"], "last_at": row["last"], "clients": clients})
    return out


def _expected_of_snippet(snippet: VersionedEntry, rollout: Rollout) -> list[dict[str, Any]]:
    """Per active client whose label resolves `snippet` from `rollout.label` (its own label's row,
    else production's: the rule of registry/serving/composed.py): its bucket by the snippet's name
    and whether it gets the candidate, by the serving bucket rule itself (`in_bucket`, on the
    rollout as the catalog carries it into every dependent)."""
    rows = set(snippet.labels.values_list("name", flat=True))
    carried = SimpleNamespace(key=snippet.key, rollout=ItemRollout(rollout.percent, None, snippet=snippet.key))
    expected = []
    for client in McpClient.objects.filter(active=True).order_by("name"):
        if not client.usable:
            continue
        resolves_from = client.label if client.label in rows else PRODUCTION
        if resolves_from != rollout.label:
            continue
        expected.append({"name": client.name, "bucket": stable_bucket(client.name, snippet.key),
                         "candidate": in_bucket(carried, viewer_of(client))})
    return expected


def _expected(entry: VersionedEntry, rollout: Rollout) -> list[dict[str, Any]]:
    """Per active client served `entry` from `rollout.label`: its bucket and whether it gets the
    candidate, by the serving rule itself (`entry_item` + `served_item`: label fallback, the
    bucket by the served key, the served version's own tags)."""
    if entry.kind == "snippet":
        return _expected_of_snippet(entry, rollout)
    items: dict[str, Any] = {}
    expected = []
    for client in McpClient.objects.filter(active=True).order_by("name"):
        if not client.usable:
            continue
        if client.label not in items:
            items[client.label] = entry_item(client.label, entry.kind, entry.pk)
        item = items[client.label]
        if item is None or item.label != rollout.label:
            continue  # served nothing of it, or served from another label
        served = served_item(item, viewer_of(client))
        if served is None:
            continue  # its scope admits neither the version it would get nor the other
        expected.append({"name": client.name, "bucket": stable_bucket(client.name, item.key),
                         "candidate": served is not item})
    return expected


def rollout_progress(entry: VersionedEntry, rollout: Rollout, *, hours: int = RECENT_HOURS) -> dict[str, Any]:
    """Old vs new version for one rollout: expected (bucket computation) and observed (recent counters,
    read by the key each version is served under, `counters_for`, not the draft's)."""
    label = kind_of(entry).label_model.objects.filter(entry=entry, name=rollout.label).select_related("version").first()
    base = label.version.number if label else None
    expected = _expected(entry, rollout)
    since = timezone.now() - timedelta(hours=hours)
    # A snippet is served inside its dependents and counted under them: no fetch names its version.
    recent = (counters_for(entry).filter(label=rollout.label, last_at__gte=since)
              .exclude(client_name="").values("client_name", "version")
              .annotate(total=Sum("count"), last=Max("last_at")))
    on_new = {r["client_name"] for r in recent if r["version"] == rollout.candidate_version}
    on_old = {r["client_name"] for r in recent if r["version"] != rollout.candidate_version}
    return {
        "rollout": rollout,
        "base_version": base,
        "expected": expected,
        "expected_new": sum(1 for e in expected if e["candidate"]),
        "expected_old": sum(1 for e in expected if not e["candidate"]),
        "observed_new": sorted(on_new),
        "observed_old": sorted(on_old),
        "observed_rows": sorted(recent, key=lambda r: (r["client_name"], -r["version"])),
        "hours": hours,
        "counted": entry.kind != "snippet",
    }


def client_receives(client: McpClient) -> list[dict[str, Any]]:
    """What `client` is served right now: one row per visible prompt, resource and template."""
    return load_catalog(client.label).served_to(viewer_of(client))
