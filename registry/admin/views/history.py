"""The history page: versions, labels, audit entries, rollouts, pending reviews and fetch counts of one entry.

It replaces the stock object history (Django's LogEntry list), which knows nothing of versions.
"""

from __future__ import annotations

from django.template.response import TemplateResponse
from django.utils.translation import gettext as _

from registry.admin.badges import when_text
from registry.admin.fetch_stats import served_by_client, served_by_version
from registry.admin.views.entry_page import EntryPageMixin
from registry.admin.views.label import can_roll_back
from registry.models import PRODUCTION, AuditEntry, ReleaseLabel, ReviewRequest, Rollout
from registry.release import rollouts, schedules
from registry.serving.fetches import counters_for


def _rollout_offers(labels: list[ReleaseLabel], running: dict[str, Rollout], number: int) -> dict[str, list]:
    """Which labels a publisher may roll version `number` out on at once, and which need a review first
    (`rollouts.needs_review`, the rule the rollout service applies); a label serving it already is neither."""
    others = [label for label in labels if label.version.number != number]
    held = {label.name for label in others if rollouts.needs_review(label, running.get(label.name), number)}
    return {"rollout_labels": [label for label in others if label.name not in held],
            "review_labels": [label for label in others if label.name in held]}


class HistoryPageMixin(EntryPageMixin):
    """Replaces the stock history page (URL name "history")."""

    def history_view(self, request, object_id, extra_context=None):
        """Versions, labels, audit entries and fetch counts of one entry (replaces the stock log)."""
        obj = self._entry(request, object_id)
        versions = list(obj.versions.all())
        labels = list(obj.labels.select_related("version"))
        by_version: dict[int, list[str]] = {}
        for label in labels:
            by_version.setdefault(label.version.number, []).append(label.name)
        running = {r.label: r for r in Rollout.objects.filter(entry_kind=obj.kind, entry_id=obj.pk)}
        rows = [{"version": v, "labels": by_version.get(v.number, []),
                 **_rollout_offers(labels, running, v.number)} for v in versions]
        label_names = list(dict.fromkeys([PRODUCTION, *(label.name for label in labels)]))
        context = self._context(
            request, obj, _("History of %(key)s") % {"key": obj.key},
            rows=rows, labels=labels, label_names=label_names,
            audit_entries=AuditEntry.objects.filter(entry_kind=obj.kind, entry_id=obj.pk).select_related("actor")[:200],
            fetches=counters_for(obj)[:200],
            by_client=served_by_client(obj), by_version=served_by_version(obj),
            rollouts=list(running.values()),
            pending_reviews=ReviewRequest.objects.filter(entry_kind=obj.kind, entry_id=obj.pk, status="pending"),
            can_roll_back=can_roll_back(obj),
            scheduled_releases=[{"schedule": row, "when": when_text(row.go_live_at)}
                                for row in schedules.for_entry(obj.kind, obj.pk)[:50]],
            **(extra_context or {}),
        )
        return TemplateResponse(request, "admin/registry/history.html", context)
