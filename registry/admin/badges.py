"""Short state badges of an entry ("draft changed since v3", "in review #12 (production)", ...).

Editors are not expected to open the history page to learn what an entry is doing; the change
list, the change page and the home page show the same few words, computed here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from registry.authoring.snapshots import content_hash, snapshot_of
from registry.models import PRODUCTION, STAGING, ReviewRequest, ReviewStatus, Rollout, VersionedEntry
from registry.release import reviews, schedules


@dataclass(frozen=True)
class Badge:
    text: str
    tone: str  # "changed", "review", "stale", "scheduled", "rollout" or "ahead": picks the colour
    url: str = ""


def when_text(moment: datetime) -> str:
    """A stored (UTC) time in the site's time zone, with the zone named: '2026-05-04 14:00 UTC'."""
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M} {timezone.get_current_timezone_name()}"


def entry_badges(entry: VersionedEntry) -> list[Badge]:
    """What is going on with `entry` right now, most urgent first."""
    badges: list[Badge] = []
    latest = entry.versions.first()
    draft_hash = content_hash(snapshot_of(entry)) if latest is not None else None
    if latest is not None and draft_hash != latest.content_hash:
        badges.append(Badge(_("draft changed since v%(number)s") % {"number": latest.number}, "changed"))
    pending = ReviewRequest.objects.filter(entry_kind=entry.kind, entry_id=entry.pk, status=ReviewStatus.PENDING)
    versions = {label.name: label.version.number for label in entry.labels.select_related("version")}
    for review in pending.order_by("id"):
        url = reverse("admin:registry_reviewrequest_change", args=[review.pk])
        if not reviews.staleness(review, entry, draft_hash=draft_hash, label_versions=versions):
            badges.append(Badge(_("in review #%(pk)s (%(label)s)") % {"pk": review.pk, "label": review.label},
                                "review", url))
        elif versions.get(review.label) == review.base_version:
            badges.append(Badge(_("review #%(pk)s (%(label)s) is stale: the draft changed")
                                % {"pk": review.pk, "label": review.label}, "stale", url))
        else:
            badges.append(Badge(_("review #%(pk)s (%(label)s) is stale: the label moved")
                                % {"pk": review.pk, "label": review.label}, "stale", url))
    for row in schedules.upcoming().filter(review__entry_kind=entry.kind, review__entry_id=entry.pk):
        url = reverse("admin:registry_reviewrequest_change", args=[row.review_id])
        if reviews.staleness(row.review, entry, draft_hash=draft_hash, label_versions=versions):
            badges.append(Badge(_("release of review #%(pk)s scheduled for %(when)s is stale")
                                % {"pk": row.review_id, "when": when_text(row.go_live_at)}, "stale", url))
        else:
            badges.append(Badge(_("goes live on '%(label)s' at %(when)s (review #%(pk)s)")
                                % {"label": row.review.label, "when": when_text(row.go_live_at), "pk": row.review_id},
                                "scheduled", url))
    for rollout in Rollout.objects.filter(entry_kind=entry.kind, entry_id=entry.pk).order_by("label"):
        text = _("rolling out v%(number)s to %(percent)s%%") % {
            "number": rollout.candidate_version, "percent": rollout.percent}
        if rollout.label != PRODUCTION:
            text += f" ({rollout.label})"  # a label name: not translated
        badges.append(Badge(text, "rollout"))
    if STAGING in versions and versions[STAGING] > versions.get(PRODUCTION, 0):
        badges.append(Badge(_("staging ahead of production"), "ahead"))
    return badges


def badges_html(badges: list[Badge]) -> SafeString:
    """Badges as small coloured spans (links when they lead somewhere)."""
    if not badges:
        return SafeString("")
    return format_html_join(
        " ", '<{0} class="registry-badge registry-badge-{1}"{2}>{3}</{0}>',
        ((("a" if b.url else "span"), b.tone, format_html(' href="{}"', b.url) if b.url else "", b.text)
         for b in badges),
    )
