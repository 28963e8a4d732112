"""Short state badges of an entry ("draft changed since v3", "in review #12 (production)", ...).

Editors are not expected to open the history page to learn what an entry is doing; the change
list, the change page and the home page show the same few words, computed here once. A list
reads what its rows' badges need for the whole page at once (`states_of`), never per row, and its
state filter asks the same badges (`entries_in_state`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import OuterRef, Prefetch, QuerySet, Subquery
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.authoring.snapshots import content_hash, for_snapshots, snapshot_of
from registry.kinds import KINDS, kind_of
from registry.models import (
    PRODUCTION,
    STAGING,
    ReviewRequest,
    ReviewStatus,
    Rollout,
    ScheduledRelease,
    VersionedEntry,
)
from registry.release import reviews, schedules


@dataclass(frozen=True)
class Badge:
    text: str
    tone: str  # "changed", "review", "stale", "scheduled", "rollout" or "ahead": picks the colour
    url: str = ""


def when_text(moment: datetime) -> str:
    """A stored (UTC) time in the site's time zone, with the zone named: '2026-05-04 14:00 UTC'."""
    return f"{timezone.localtime(moment):%Y-%m-%d %H:%M} {timezone.get_current_timezone_name()}"


@dataclass(frozen=True)
class EntryState:
    """What the badges of one entry read besides the entry and its labels: read for a whole page at
    once by `states_of`, so a change list asks the database a fixed number of times per page."""

    latest: tuple[int, str] | None  # the newest version's number and content hash
    pending: list[ReviewRequest] = field(default_factory=list)
    scheduled: list[ScheduledRelease] = field(default_factory=list)
    rollouts: list[Rollout] = field(default_factory=list)


def states_of(entries: Sequence[VersionedEntry]) -> dict[int, EntryState]:
    """The `EntryState` of each of `entries` (of one kind) by primary key, in four queries."""
    if not entries:
        return {}
    kind, ids = entries[0].kind, [entry.pk for entry in entries]
    versions = kind_of(entries[0]).version_model.objects
    newest = versions.filter(entry_id=OuterRef("entry_id")).order_by("-number").values("number")[:1]
    latest = {entry_id: (number, digest) for entry_id, number, digest in versions.filter(
        entry_id__in=ids, number=Subquery(newest)).values_list("entry_id", "number", "content_hash")}
    pending: dict[int, list[ReviewRequest]] = defaultdict(list)
    for review in ReviewRequest.objects.filter(entry_kind=kind, entry_id__in=ids,
                                               status=ReviewStatus.PENDING).order_by("id"):
        pending[review.entry_id].append(review)
    scheduled: dict[int, list[ScheduledRelease]] = defaultdict(list)
    for row in schedules.upcoming().filter(review__entry_kind=kind, review__entry_id__in=ids):
        scheduled[row.review.entry_id].append(row)
    running: dict[int, list[Rollout]] = defaultdict(list)
    for rollout in Rollout.objects.filter(entry_kind=kind, entry_id__in=ids).order_by("label"):
        running[rollout.entry_id].append(rollout)
    return {pk: EntryState(latest.get(pk), pending[pk], scheduled[pk], running[pk]) for pk in ids}


def with_badge_reads(queryset: QuerySet) -> QuerySet:
    """`queryset` (of one entry model) with the labels and draft rows its badges read prefetched."""
    labels = KINDS[queryset.model.kind].label_model.objects.select_related("version").defer(
        "version__snapshot", "version__listing")  # badges and lists show numbers only
    return for_snapshots(queryset.prefetch_related(None).prefetch_related(Prefetch("labels", queryset=labels)))


# The states a change list filters by: a badge tone -> the filter's words.
STATE_TONES = {
    "changed": gettext_lazy("Draft changed since the newest version"),
    "review": gettext_lazy("In review"),
    "rollout": gettext_lazy("Rolling out"),
    "scheduled": gettext_lazy("Release scheduled"),
    "stale": gettext_lazy("Stale review or scheduled release"),
}


def entries_in_state(entries: QuerySet[VersionedEntry], tone: str) -> list[int]:
    """The primary keys of the `entries` (a change list's queryset, as the other filters left it)
    showing a badge of `tone` (a key of STATE_TONES).

    Only the entries that could show it are read (published ones for "changed"; those with an open
    request, a scheduled release or a rollout otherwise), and only among `entries`, all at once
    with what their badges need, in a fixed number of queries whatever their number; the badges'
    own rule then decides."""
    kind = entries.model.kind
    narrowed = entries.model.objects.filter(pk__in=entries.values("pk"))  # without the list's own reads
    entries_of = narrowed.filter
    pending = ReviewRequest.objects.filter(entry_kind=kind, status=ReviewStatus.PENDING).values("entry_id")
    waiting = schedules.upcoming().filter(review__entry_kind=kind).values("review__entry_id")
    candidates = {
        "changed": lambda: entries_of(pk__in=KINDS[kind].version_model.objects.values("entry_id")),
        "review": lambda: entries_of(pk__in=pending),
        "rollout": lambda: entries_of(pk__in=Rollout.objects.filter(entry_kind=kind).values("entry_id")),
        "scheduled": lambda: entries_of(pk__in=waiting),
        "stale": lambda: entries_of(pk__in=pending) | entries_of(pk__in=waiting),
    }[tone]()
    found = list(with_badge_reads(candidates))
    states = states_of(found)
    return [entry.pk for entry in found if any(b.tone == tone for b in entry_badges(entry, states[entry.pk]))]


def label_versions(entry: VersionedEntry) -> dict[str, int]:
    """Label name -> version number, from the prefetched labels when the caller has them."""
    if "labels" in getattr(entry, "_prefetched_objects_cache", {}):
        labels = entry.labels.all()
    else:
        labels = entry.labels.select_related("version")
    return {label.name: label.version.number for label in labels}


def entry_badges(entry: VersionedEntry, state: EntryState | None = None) -> list[Badge]:
    """What is going on with `entry` right now, most urgent first.

    `state` (from `states_of`, with the entry's labels and snapshot rows prefetched, see
    `registry.authoring.snapshots.for_snapshots`) spares every query; without it one entry is read."""
    state = state if state is not None else states_of([entry])[entry.pk]
    badges: list[Badge] = []
    versions = label_versions(entry)
    asks_for_draft = any(r.version_number is None for r in [*state.pending, *(s.review for s in state.scheduled)])
    # The draft's hash only when something compares with it: snapshotting is the costly part.
    draft_hash = content_hash(snapshot_of(entry)) if state.latest is not None or asks_for_draft else None
    if state.latest is not None and draft_hash != state.latest[1]:
        badges.append(Badge(_("draft changed since v%(number)s") % {"number": state.latest[0]}, "changed"))
    for review in state.pending:
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
    for row in state.scheduled:
        url = reverse("admin:registry_reviewrequest_change", args=[row.review_id])
        if reviews.staleness(row.review, entry, draft_hash=draft_hash, label_versions=versions):
            badges.append(Badge(_("release of review #%(pk)s scheduled for %(when)s is stale")
                                % {"pk": row.review_id, "when": when_text(row.go_live_at)}, "stale", url))
        else:
            badges.append(Badge(_("goes live on '%(label)s' at %(when)s (review #%(pk)s)")
                                % {"label": row.review.label, "when": when_text(row.go_live_at), "pk": row.review_id},
                                "scheduled", url))
    for rollout in state.rollouts:
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
