"""The audit log: read-only, filterable, with a readable diff and CSV/JSON export for auditors."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IncorrectLookupParameters
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBadRequest
from django.template.loader import render_to_string
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.access import ReadOnlyAdminMixin
from registry.admin.diff import recorded
from registry.admin.lookups import DeclaredFiltersOnlyMixin, EntryKindFilter
from registry.authoring.snapshots import diff_loader
from registry.kinds import kind_name
from registry.models import AuditAction, AuditEntry
from registry.release.audit_export import EXPORT_FORMATS, export_response

EXPORT_PERMISSION = "registry.export_auditentry"


# A review row's versions are what the label served and what was asked for (None: the draft), not a
# move: "v1 → none" read as if the label had been emptied. These say what happened in words.
_REVIEW_WORDS: dict[str, Any] = {
    AuditAction.REVIEW_REQUESTED: gettext_lazy("asked for %(target)s (%(label)s served %(was)s)"),
    AuditAction.REVIEW_APPROVED: gettext_lazy("approved %(target)s (%(label)s served %(was)s)"),
    AuditAction.REVIEW_REJECTED: gettext_lazy("rejected %(target)s (%(label)s served %(was)s)"),
    AuditAction.REVIEW_WITHDRAWN: gettext_lazy("withdrew the request for %(target)s (%(label)s served %(was)s)"),
    AuditAction.REVIEW_SUPERSEDED: gettext_lazy("the request for %(target)s was superseded "
                                                "(%(label)s served %(was)s)"),
    AuditAction.REVIEW_STALE: gettext_lazy("the request for %(target)s went stale (%(label)s served %(was)s)"),
    AuditAction.REVIEW_COMMENTED: gettext_lazy("on the request for %(target)s (%(label)s served %(was)s)"),
    AuditAction.CHANGES_REQUESTED: gettext_lazy("on the request for %(target)s (%(label)s served %(was)s)"),
    AuditAction.RELEASE_RESCHEDULED: gettext_lazy("release of %(target)s (%(label)s served %(was)s)"),
    AuditAction.RELEASE_CANCELLED: gettext_lazy("release of %(target)s (%(label)s served %(was)s)"),
    AuditAction.RELEASE_FAILED: gettext_lazy("release of %(target)s (%(label)s served %(was)s)"),
}


def folder_move_text(changes: list[dict[str, Any]]) -> str:
    """A folder_moved row's change in words: the folder is in no snapshot, so no diff section names it."""
    change = next((c for c in changes if isinstance(c, dict) and c.get("field") == "folder"), {})
    before, after = (change.get(side) or _("(no folder)") for side in ("before", "after"))
    return _("Moved from the folder “%(before)s” to “%(after)s”.") % {"before": before, "after": after}


def refusal_text(changes: list[dict[str, Any]]) -> str:
    """A refused row in words: what was tried and which team's folder stopped it (the note says why)."""
    from registry.refusals import ATTEMPTS

    after = {c.get("field"): c.get("after") for c in changes if isinstance(c, dict)}
    attempted = ATTEMPTS.get(after.get("attempted") or "", after.get("attempted") or "")
    if not after.get("team"):  # a refusal by role or approval rule: the note says which
        return _("Refused: tried to %(attempted)s.") % {"attempted": attempted}
    return _("Refused: tried to %(attempted)s in the folder “%(folder)s” of the team “%(team)s”.") % {
        "attempted": attempted, "folder": after.get("folder") or "", "team": after.get("team") or ""}


def _version(number: int | None) -> str:
    return _("v%(number)s") % {"number": number} if number is not None else _("nothing")


def versions_text(entry: AuditEntry) -> str:
    """The versions of an audit row in the reader's language: "v1 → v2" for a move, and for a row
    about a review request what it asked for and what the label served ("asked for the draft
    (production served v1)"), never "v1 → none"."""
    words = _REVIEW_WORDS.get(entry.action)
    if words is not None:
        target = _("the draft") if entry.to_version is None else _version(entry.to_version)
        return str(words) % {"target": target, "label": entry.label, "was": _version(entry.from_version)}
    if entry.from_version is None and entry.to_version is None:
        return ""
    return f"{_version(entry.from_version)} → {_version(entry.to_version)}"


@admin.register(AuditEntry)
class AuditEntryAdmin(ReadOnlyAdminMixin, DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    list_display = ["created_at", "actor_name", "action", "kind", "entry_key", "label", "versions",
                    "change_summary", "note"]
    list_filter = ["action", EntryKindFilter, ("actor", admin.RelatedOnlyFieldListFilter), "created_at"]
    search_fields = ["entry_key", "actor_name", "note", "label"]
    date_hierarchy = "created_at"
    change_list_template = "admin/registry/auditentry/change_list.html"

    class Media:
        css = {"all": ["registry/audit.css"]}
    fields = ("created_at", "actor_name", "action", "kind", "entry_key", "label", "versions", "note",
              "readable_changes")
    readonly_fields = fields

    @admin.display(description=gettext_lazy("entry kind"), ordering="entry_kind")
    def kind(self, obj: AuditEntry) -> str:
        return str(kind_name(obj.entry_kind))

    @admin.display(description=gettext_lazy("versions"))
    def versions(self, obj: AuditEntry) -> str:
        return versions_text(obj)

    @admin.display(description=gettext_lazy("change"))
    def change_summary(self, obj: AuditEntry) -> str:
        """One readable line per entry, e.g. "Message 2 text changed; Title changed"."""
        if obj.action == AuditAction.FOLDER_MOVED:
            return folder_move_text(obj.changes)
        if obj.action == AuditAction.REFUSED:
            return refusal_text(obj.changes)
        return recorded.change_summary(obj.entry_kind, obj.changes)

    @admin.display(description=gettext_lazy("what changed"))
    def readable_changes(self, obj: AuditEntry) -> str:
        if not obj.changes:
            return _("No field changes recorded.")
        if obj.action == AuditAction.FOLDER_MOVED:
            return folder_move_text(obj.changes)
        if obj.action == AuditAction.REFUSED:
            return refusal_text(obj.changes)
        diff = recorded.from_changes(obj.entry_kind, obj.changes, before_name=_("before"), after_name=_("after"),
                                     load=diff_loader())
        return render_to_string("admin/registry/_diff.html", {"diff": diff})

    def changelist_view(self, request, extra_context=None):
        extra_context = {**(extra_context or {}), "can_export": request.user.has_perm(EXPORT_PERMISSION)}
        return super().changelist_view(request, extra_context)

    def get_urls(self):
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        return [
            path("export/<str:fmt>/", self.admin_site.admin_view(self.export_view), name=f"{prefix}_export"),
            *super().get_urls(),
        ]

    def export_view(self, request, fmt: str):
        """The entries the change list shows with the same filters and search, as CSV or JSON."""
        if not request.user.has_perm(EXPORT_PERMISSION):
            raise PermissionDenied(_("Only auditors may export the audit log."))
        if fmt not in EXPORT_FORMATS:
            return HttpResponseBadRequest(_("Export as csv or json."))
        try:
            changelist = self.get_changelist_instance(request)
        except IncorrectLookupParameters:
            return HttpResponseBadRequest(_("Unknown filter in the address."))
        return export_response(changelist.queryset.iterator(), fmt)
