"""What every versioned entry's admin shares: the list, the edit form, audited draft saves,
safe deletes, archiving, and the wiring of its extra pages (registry/admin/views/).

Drafts are plain field edits (the admin saves them and records the audit row in the same
transaction); everything that touches versions or labels goes through `registry.release.services`,
which re-checks the user's permission, so a crafted request meets the same rule as a button.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.utils import model_ngettext, unquote
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpResponseRedirect
from django.urls import path
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from registry import roles
from registry.admin.badges import badges_html, entry_badges, states_of, with_badge_reads
from registry.admin.error_summary import error_summary
from registry.admin.filters import ENTRY_FILTERS
from registry.admin.lookups import DeclaredFiltersOnlyMixin
from registry.admin.served_now import rollbacks_of
from registry.admin.used_by import used_by_panel
from registry.admin.views.compare import ComparePageMixin
from registry.admin.views.history import HistoryPageMixin
from registry.admin.views.label import LabelPageMixin, can_roll_back
from registry.admin.views.preview import PreviewPageMixin
from registry.admin.views.publish import PublishPageMixin
from registry.admin.views.release_request import ReleaseRequestPageMixin
from registry.admin.views.restore import RestorePageMixin
from registry.admin.views.rollout import RolloutPageMixin
from registry.authoring import drafts, integrity
from registry.authoring.snapshots import snapshot_of
from registry.changes import service_scope
from registry.errors import InvalidEntry, PublishPermissionDenied
from registry.models import PRODUCTION, ReviewRequest, VersionedEntry
from registry.refusals import record_refusal
from registry.release import reviews, services


class ArchivedFilter(admin.SimpleListFilter):
    title = gettext_lazy("status")
    parameter_name = "archived"

    def lookups(self, request, model_admin):
        return [("no", _("In use")), ("yes", _("Archived"))]

    def queryset(self, request, queryset):
        if self.value() == "yes":
            return queryset.filter(archived_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(archived_at__isnull=True)
        return queryset


class EntryChangeList(ChangeList):
    """The entry list: its page is read with everything its columns and badges show in a fixed
    number of queries, whatever the number of rows (issue 23: it was a snapshot and a few queries
    per row)."""

    def get_queryset(self, request, exclude_parameters=None):
        return with_badge_reads(super().get_queryset(request, exclude_parameters))

    def get_results(self, request):
        super().get_results(request)
        rows = list(self.result_list)  # evaluated once here; the template iterates the same cache
        states = states_of(rows)
        for row in rows:
            row._registry_state = states[row.pk]


class VersionedEntryAdmin(DeclaredFiltersOnlyMixin, PreviewPageMixin, ComparePageMixin, HistoryPageMixin,
                          PublishPageMixin, ReleaseRequestPageMixin, RolloutPageMixin, LabelPageMixin,
                          RestorePageMixin, admin.ModelAdmin):
    """Base ModelAdmin for Prompt, Resource, ResourceTemplate and Snippet."""

    key_field = "name"
    change_form_template = "admin/registry/entry_change_form.html"
    actions = ["publish_selected", "archive_selected", "unarchive_selected"]
    list_filter = [ArchivedFilter, *ENTRY_FILTERS]
    readonly_fields = ["published_versions"]

    class Media:
        css = {"all": ["registry/editor.css"]}

    # ----------------------------------------------------------------------------- list & form

    @admin.display(description=gettext_lazy("production"))
    def production_version(self, obj: VersionedEntry) -> str:
        label = next((label for label in obj.labels.all() if label.name == PRODUCTION), None)
        if obj.archived_at:
            return _("archived")
        return _("v%(number)s") % {"number": label.version.number} if label else _("not published")

    @admin.display(description=gettext_lazy("state"))
    def state(self, obj: VersionedEntry) -> str:
        return badges_html(entry_badges(obj, getattr(obj, "_registry_state", None)))

    def get_changelist(self, request, **kwargs):
        return EntryChangeList

    def get_list_display(self, request):
        columns = list(super().get_list_display(request))
        if "state" not in columns:
            at = columns.index("production_version") + 1 if "production_version" in columns else len(columns)
            columns.insert(at, "state")
        return columns

    @admin.display(description=gettext_lazy("published versions"))
    def published_versions(self, obj: VersionedEntry) -> str:
        if obj is None or obj.pk is None:
            return _("None yet: this is a new draft.")
        labels = ", ".join(f"{label.name} → v{label.version.number}" for label in obj.labels.all())
        count = obj.versions.count()
        if not count:
            return _("None yet: publish the draft to make it available to clients.")
        return ngettext("%(count)s version; %(labels)s", "%(count)s versions; %(labels)s", count) % {
            "count": count, "labels": labels or _("no labels")}

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("labels__version")

    def get_readonly_fields(self, request, obj=None):
        fields = list(super().get_readonly_fields(request, obj))
        if obj is not None and obj.pk and obj.versions.exists():
            fields.append(self.key_field)  # clients know the entry by it; it cannot change any more
        return fields

    def get_object(self, request, object_id, from_field=None):
        obj = super().get_object(request, object_id, from_field)
        if obj is not None and request.method == "POST" and transaction.get_connection().in_atomic_block:
            # changeform_view is one transaction: lock the row and validate against its current
            # revision, so a concurrent save is refused (forms.entry.DraftRevisionMixin), never reverted.
            drafts.lock_draft(obj)
        return obj

    def render_change_form(self, request, context, add=False, change=False, form_url="", obj=None):
        context["registry_can_publish"] = bool(obj is not None and obj.pk and services.can_publish(request.user, obj))
        context["registry_can_request"] = bool(obj is not None and obj.pk and reviews.can_request(request.user, obj))
        # Every kind, the add page too: an edit (or a new entry) can be seen as a client gets it before it is kept.
        context["registry_preview_edits_url"] = self.preview_edits_url(obj)
        if obj is not None and obj.pk:
            pending = list(ReviewRequest.objects.filter(entry_kind=obj.kind, entry_id=obj.pk, status="pending"))
            stale = reviews.staleness_of(pending)
            context["registry_pending_reviews"] = len(pending)
            context["registry_badges"] = badges_html(entry_badges(obj))
            # A request for the draft as it was is approved only while the draft is unchanged: warn
            # before a save makes it stale, and say so once it is (the same rule approval applies).
            context["registry_draft_reviews"] = [r for r in pending if r.version_number is None and not stale[r.pk]]
            context["registry_stale_reviews"] = [stale[r.pk] for r in pending if stale[r.pk]]
            context["registry_rollbacks"] = rollbacks_of(obj)
            if obj.kind in ("snippet", "resource"):
                context["registry_used_by"] = used_by_panel(obj)
        context["registry_has_versions"] = bool(obj is not None and obj.pk and obj.versions.exists())
        context["registry_can_roll_back"] = bool(obj is not None and obj.pk and can_roll_back(obj))
        if obj is not None and obj.pk:
            for problem in integrity.problems_for_entry(obj):
                messages.warning(request, _("Integrity warning: %(problem)s. Clients reading it get an error; "
                                            "upload the file again and publish, or restore it to the storage.")
                                 % {"problem": problem})
        if context.get("errors"):
            context["registry_error_summary"] = error_summary(context["adminform"],
                                                              context.get("inline_admin_formsets") or ())
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    # ------------------------------------------------------------------------- team ownership

    def has_change_permission(self, request, obj=None):
        """An entry in a folder owned by a team the user is not in is shown read-only (registry.roles)."""
        allowed = super().has_change_permission(request, obj)
        return bool(allowed and (obj is None or roles.in_owning_team(request.user, obj.folder)))

    def has_delete_permission(self, request, obj=None):
        allowed = super().has_delete_permission(request, obj)
        return bool(allowed and (obj is None or roles.in_owning_team(request.user, obj.folder)))

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change=change, **kwargs)
        return type(form.__name__, (form,), {"registry_user": request.user})

    def change_view(self, request, object_id, form_url="", extra_context=None):
        obj = self.get_object(request, unquote(object_id)) if request.method == "GET" else None
        if obj is not None:
            refusal = roles.folder_refusal(request.user, [obj.folder])
            if refusal is not None and super().has_change_permission(request, obj):
                messages.warning(request, refusal.message)
        return super().change_view(request, object_id, form_url, extra_context)

    # ------------------------------------------------------------------------- audited saving

    def save_model(self, request, obj, form, change):
        # The database still holds the previous draft (with its child rows) at this point.
        stored = type(obj).objects.get(pk=obj.pk) if change else None
        # The form refused it already (EntryForm.check_folder_owner); the service rule, again, for every save.
        roles.require_folder_editor(request.user, obj, before_folder=stored.folder if stored is not None else None)
        obj._registry_before = snapshot_of(stored) if stored is not None else None
        obj._registry_folder_before = stored.folder if stored is not None else ""
        obj.updated_by = request.user.get_username()
        with service_scope():  # save_related audits the edit and the move (the receivers would audit the move again)
            super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        obj = form.instance
        # changeform_view runs in one transaction, so the audit row commits with the edit.
        drafts.record_draft_change(obj, before=getattr(obj, "_registry_before", None), acting_user=request.user)
        # The folder is in no snapshot (nothing a client is served): its move is audited on its own.
        drafts.record_folder_change(obj, before=getattr(obj, "_registry_folder_before", ""), acting_user=request.user)
        warnings = list(getattr(form, "registry_warnings", []))
        for formset in formsets:
            warnings.extend(getattr(formset, "registry_warnings", []))
        for warning in dict.fromkeys(warnings):
            messages.warning(request, _("Saved, but note: %(warning)s") % {"warning": warning})

    # --------------------------------------------------------------------------------- deleting

    def _archive_hint(self, obj: VersionedEntry) -> str:
        return _(
            "“%(key)s” has published versions, so it cannot be deleted: clients may rely on it and its "
            "history must be kept. Archive it instead (select it in the list and choose “Archive selected”)."
        ) % {"key": obj.key}

    def delete_view(self, request, object_id, extra_context=None):
        obj = self.get_object(request, unquote(object_id))
        if obj is not None and obj.versions.exists():
            messages.error(request, self._archive_hint(obj))
            return HttpResponseRedirect(self._url("change", obj))
        if obj is not None:
            refusal = self._ownership_refusal(request, obj, attempted="delete")
            if refusal is not None:  # says why, on the entry's read-only page, instead of a bare 403
                if request.method == "POST":
                    record_refusal(refusal)
                messages.error(request, refusal.message)
                return HttpResponseRedirect(self._url("change", obj))
        return super().delete_view(request, object_id, extra_context)

    def _delete_leaving_owned_aside(self, delete_selected):
        """Django's "delete selected" with the entries of folders the user's team does not own
        taken out first, each refused with its reason and its audit row, rather than the whole
        action ending in a bare 403 (Django refuses a queryset holding anything the user may not
        delete, before delete_queryset could say why)."""

        def action(modeladmin, request, queryset):
            allowed = []
            for obj in queryset:
                refusal = self._ownership_refusal(request, obj, attempted="delete")
                if refusal is None:
                    allowed.append(obj.pk)
                    continue
                record_refusal(refusal)
                messages.error(request, refusal.message)
            if not allowed:
                return None  # back to the list, with the messages
            return delete_selected(modeladmin, request, queryset.filter(pk__in=allowed))

        return action

    def delete_model(self, request, obj):
        if obj.versions.exists():
            raise PermissionDenied(self._archive_hint(obj))
        drafts.record_deletion(obj, snapshot=snapshot_of(obj), acting_user=request.user)
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        with transaction.atomic():
            for obj in queryset:
                if obj.versions.exists():
                    messages.error(request, self._archive_hint(obj))
                    continue
                refusal = roles.folder_refusal(request.user, [obj.folder], entry=obj, attempted="delete")
                if refusal is not None:  # delete_model would refuse it (drafts.record_deletion): say so instead
                    record_refusal(refusal)
                    messages.error(request, refusal.message)
                    continue
                self.delete_model(request, obj)

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        published = [obj.key for obj in objs if obj.versions.exists()]
        if published:
            messages.warning(
                request,
                _("These have published versions and cannot be deleted; archive them instead: %(keys)s")
                % {"keys": ", ".join(published)},
            )
        return deleted, counts, perms_needed, protected

    # ---------------------------------------------------------------------------------- actions

    def get_actions(self, request):
        actions = super().get_actions(request)
        stock = actions.get("delete_selected")
        if stock is not None:
            func, name, description = stock
            actions["delete_selected"] = (self._delete_leaving_owned_aside(func), name, description)
        if not services.can_publish(request.user, self.model()):
            for name in ("publish_selected", "archive_selected", "unarchive_selected"):
                actions.pop(name, None)
        return actions

    def _set_archived(self, request, queryset, archived: bool) -> None:
        done = 0
        for obj in queryset:
            try:
                services.set_archived(obj, archived=archived, acting_user=request.user)
            except PublishPermissionDenied as exc:  # another team's folder: say whose, go on with the rest
                messages.error(request, _("%(key)s: %(reason)s") % {"key": obj.key, "reason": exc.message})
                continue
            except InvalidEntry as exc:  # this one cannot be archived or restored now: say why, go on with the rest
                messages.error(request, " ".join(exc.problems))
                continue
            done += 1
        if done:  # every one refused: the errors above say it all
            text = _("Archived %(count)s %(things)s.") if archived else _("Restored %(count)s %(things)s.")
            messages.success(request, text % {"count": done, "things": model_ngettext(self.opts, done)})

    @admin.action(description=gettext_lazy("Archive selected (stop serving, keep history)"))
    def archive_selected(self, request, queryset):
        self._set_archived(request, queryset, True)

    @admin.action(description=gettext_lazy("Restore selected from archive"))
    def unarchive_selected(self, request, queryset):
        self._set_archived(request, queryset, False)

    # ------------------------------------------------------------------------------ extra pages

    def get_urls(self):
        prefix = f"{self.opts.app_label}_{self.opts.model_name}"
        wrap = self.admin_site.admin_view
        return [
            *self.preview_edits_urls(),  # before the generic <object_id>/ routes: add/preview-edits/ is no object
            path("<path:object_id>/preview/", wrap(self.preview_view), name=f"{prefix}_preview"),
            path("<path:object_id>/diff/", wrap(self.diff_view), name=f"{prefix}_diff"),
            path("<path:object_id>/publish/", wrap(self.publish_view), name=f"{prefix}_publish"),
            path("<path:object_id>/label/", wrap(self.label_view), name=f"{prefix}_label"),
            path("<path:object_id>/restore/", wrap(self.restore_view), name=f"{prefix}_restore"),
            path("<path:object_id>/request/", wrap(self.request_view), name=f"{prefix}_request"),
            path("<path:object_id>/rollout/", wrap(self.rollout_view), name=f"{prefix}_rollout"),
            *super().get_urls(),
        ]
