"""Who got which version: figures for the admin pages, from the fetch counters and the catalog.

The counters are written in batches by `registry.serving.fetches` (never on the request path); these
functions only read them. "What a client receives now" is computed from the same in-memory
catalog the MCP endpoint serves from, with the client's label, scope and rollout buckets.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Max, Sum
from django.utils import timezone

from registry.formats.buckets import gets_candidate, stable_bucket
from registry.kinds import kind_of
from registry.models import PRODUCTION, FetchCounter, McpClient, Rollout, VersionedEntry
from registry.serving.catalogs import load_catalog
from registry.serving.viewer import Viewer

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
    rows = FetchCounter.objects.filter(entry_kind=entry.kind, entry_key=entry.key).order_by("client_name", "-version")
    for row in rows:
        summary = by_client.setdefault(row.client_name, ClientVersions(row.client_name))
        summary.versions.append({"version": row.version, "label": row.label, "count": row.count,
                                 "first_at": row.first_at, "last_at": row.last_at})
        summary.total += row.count
        summary.last_at = max(filter(None, [summary.last_at, row.last_at]))
    return sorted(by_client.values(), key=lambda s: s.last_at or timezone.now(), reverse=True)


def served_by_version(entry: VersionedEntry) -> list[dict[str, Any]]:
    """Per version: fetches, distinct clients, last fetch."""
    rows = (FetchCounter.objects.filter(entry_kind=entry.kind, entry_key=entry.key)
            .values("version").annotate(total=Sum("count"), last=Max("last_at")).order_by("-version"))
    out = []
    for row in rows:
        clients = (FetchCounter.objects.filter(entry_kind=entry.kind, entry_key=entry.key, version=row["version"])
                   .values("client_name").distinct().count())
        out.append({"version": row["version"], "total": row["total"], "last_at": row["last"], "clients": clients})
    return out


def _clients_served_from(entry: VersionedEntry, label: str) -> list[McpClient]:
    """Active clients whose catalog serves `entry` from `label` (their own label, or production as fallback)."""
    rows = kind_of(entry).label_model.objects.filter(entry=entry).select_related("version")
    own = {row.name for row in rows}
    served = next((row for row in rows if row.name == label), None)
    tags = frozenset(served.version.snapshot.get("tags") or ()) if served else frozenset()  # the published tags
    chosen = []
    for client in McpClient.objects.filter(active=True).order_by("name"):
        if not client.usable:
            continue
        served_label = client.label if client.label in own else PRODUCTION
        if served_label != label:
            continue
        if client.scope and not (client.scope & tags):
            continue
        chosen.append(client)
    return chosen


def rollout_progress(entry: VersionedEntry, rollout: Rollout, *, hours: int = RECENT_HOURS) -> dict[str, Any]:
    """Old vs new version for one rollout: expected (bucket computation) and observed (recent counters)."""
    label = kind_of(entry).label_model.objects.filter(entry=entry, name=rollout.label).select_related("version").first()
    base = label.version.number if label else None
    clients = _clients_served_from(entry, rollout.label)
    expected = [{"name": c.name, "bucket": stable_bucket(c.name, entry.key),
                 "candidate": gets_candidate(c.name, entry.key, rollout.percent)} for c in clients]
    since = timezone.now() - timedelta(hours=hours)
    recent = (FetchCounter.objects.filter(entry_kind=entry.kind, entry_key=entry.key, label=rollout.label,
                                          last_at__gte=since)
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
    }


def client_receives(client: McpClient) -> list[dict[str, Any]]:
    """What `client` is served right now: one row per visible prompt, resource and template."""
    viewer = Viewer(label=client.label, scope_tags=client.scope, client_id=client.pk, client_name=client.name)
    catalog = load_catalog(client.label)
    return catalog.served_to(viewer)
