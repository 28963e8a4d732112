"""What every versioned entry's admin shares: audited draft saves, safe deletes, preview,
diff, history, publish, label moves / roll backs and archiving.

Drafts are plain field edits (the admin saves them and records the audit row in the same
transaction); everything that touches versions or labels goes through `registry.release.services`,
which re-checks the user's permission, so a crafted request meets the same rule as a button.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin.utils import model_ngettext, quote, unquote
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy, ngettext

from registry.admin.diff.sections import build
from registry.release import reviews, rollouts, services
from registry.authoring import drafts, integrity
from registry.admin.badges import badges_html, entry_badges
from registry.admin.fetch_stats import rollout_progress, served_by_client, served_by_version
from registry.admin.lookups import DeclaredFiltersOnlyMixin
from registry.errors import ContentMissing, InvalidEntry, PublishPermissionDenied, RegistryError, RolloutConflict
from registry.admin.forms.releases import LabelMoveForm, PublishForm, ReviewRequestForm, RolloutForm
from registry.kinds import KINDS
from registry.models import PRODUCTION, AuditEntry, EntryVersion, FetchCounter, ReviewRequest, Rollout, VersionedEntry
from registry.models.base import label_name_validator
from registry.authoring.snapshots import Payloads, diff_loader, snapshot_of
from registry.authoring.validation import validate_entry


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


class ReadOnlyAdminMixin:
    """For ModelAdmins and inlines of rows that change only through the services (or never).

    Whoever has the view permission sees them; nobody adds, changes or deletes them in the admin.
    """

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


def sees_internals(user: Any) -> bool:
    """Publishers and auditors oversee versions, labels, rollouts and fetches; editors work on drafts."""
    if not user.is_active:
        return False
    return bool(user.is_superuser or user.has_perm("registry.export_auditentry")
                or any(user.has_perm(kind.publish_permission) for kind in KINDS.values()))


class InternalsMixin:
    """Keeps a ModelAdmin off an editor's home page and sidebar (its pages stay reachable by link)."""

    def has_module_permission(self, request: HttpRequest) -> bool:
        return sees_internals(request.user) and super().has_module_permission(request)  # type: ignore[misc]


def add_refusal(form: forms.BaseForm, exc: RegistryError) -> None:
    """Show why the registry refused at the top of `form`, each problem of an invalid draft on its own line."""
    for problem in exc.problems if isinstance(exc, InvalidEntry) else [exc.message]:
        form.add_error(None, problem)


def can_roll_back(entry: VersionedEntry, label: str = PRODUCTION) -> bool:
    """True when `label` serves a version and an older one exists to go back to."""
    current = entry.labels.filter(name=label).select_related("version").first()
    return current is not None and entry.versions.filter(number__lt=current.version.number).exists()


def version_choices(entry: VersionedEntry) -> list[tuple[int, str]]:
    """Published versions as 'v3 — change note' choices, newest first."""
    return [(v.number, _("v%(number)s — %(note)s") % {"number": v.number, "note": v.change_note[:60]})
            for v in entry.versions.all()]


class VersionedEntryAdmin(DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    """Base ModelAdmin for Prompt, Resource and ResourceTemplate."""

    key_field = "name"
    change_form_template = "admin/registry/entry_change_form.html"
    preview_template = ""
    actions = ["publish_selected", "archive_selected", "unarchive_selected"]
    list_filter = [ArchivedFilter]
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
        return badges_html(entry_badges(obj))

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
        if obj is not None and obj.pk:
            pending = list(ReviewRequest.objects.filter(entry_kind=obj.kind, entry_id=obj.pk, status="pending"))
            context["registry_pending_reviews"] = len(pending)
            context["registry_badges"] = badges_html(entry_badges(obj))
            # A request for the draft as it was is approved only while the draft is unchanged.
            context["registry_draft_reviews"] = [r for r in pending if r.version_number is None]
        context["registry_has_versions"] = bool(obj is not None and obj.pk and obj.versions.exists())
        context["registry_can_roll_back"] = bool(obj is not None and obj.pk and can_roll_back(obj))
        if obj is not None and obj.pk:
            for problem in integrity.problems_for_entry(obj):
                messages.warning(request, _("Integrity warning: %(problem)s. Clients reading it get an error; "
                                            "upload the file again and publish, or restore it to the storage.")
                                 % {"problem": problem})
        return super().render_change_form(request, context, add=add, change=change, form_url=form_url, obj=obj)

    # ------------------------------------------------------------------------- audited saving

    def save_model(self, request, obj, form, change):
        # The database still holds the previous draft (with its child rows) at this point.
        obj._registry_before = snapshot_of(type(obj).objects.get(pk=obj.pk)) if change else None
        obj.updated_by = request.user.get_username()
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        obj = form.instance
        # changeform_view runs in one transaction, so the audit row commits with the edit.
        drafts.record_draft_change(obj, before=getattr(obj, "_registry_before", None), acting_user=request.user)
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
        return super().delete_view(request, object_id, extra_context)

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
        if not services.can_publish(request.user, self.model()):
            for name in ("publish_selected", "archive_selected", "unarchive_selected"):
                actions.pop(name, None)
        return actions

    @admin.action(description=gettext_lazy("Publish selected drafts…"))
    def publish_selected(self, request, queryset):
        objs = list(queryset)
        if not all(services.can_publish(request.user, obj) for obj in objs):
            messages.error(request, _("You may edit drafts but not publish them."))
            return None
        form = PublishForm(request.POST if request.POST.get("confirm") else None,
                           can_override=services.can_override(request.user), protected=services.protected_label_names())
        if form.is_bound and form.is_valid():
            for obj in objs:
                try:
                    version, filed = self._publish_or_request(request, obj, form)
                except RegistryError as exc:
                    messages.error(request, _("%(key)s: %(reason)s") % {"key": obj.key, "reason": exc.message})
                else:
                    self._report_publish(request, obj, version, form, filed)
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": _("Publish %(count)s %(things)s") % {"count": len(objs), "things": self.opts.verbose_name_plural},
            "opts": self.opts,
            "objects": objs,
            "form": form,
            "action_name": "publish_selected",
            "selected": [obj.pk for obj in objs],
        }
        return TemplateResponse(request, "admin/registry/publish_selected.html", context)

    def _set_archived(self, request, queryset, archived: bool) -> None:
        done = 0
        for obj in queryset:
            try:
                services.set_archived(obj, archived=archived, acting_user=request.user)
            except PublishPermissionDenied as exc:
                messages.error(request, exc.message)
                return
            done += 1
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
        info = self.opts.app_label, self.opts.model_name
        wrap = self.admin_site.admin_view
        return [
            path("<path:object_id>/preview/", wrap(self.preview_view), name="%s_%s_preview" % info),
            path("<path:object_id>/diff/", wrap(self.diff_view), name="%s_%s_diff" % info),
            path("<path:object_id>/publish/", wrap(self.publish_view), name="%s_%s_publish" % info),
            path("<path:object_id>/label/", wrap(self.label_view), name="%s_%s_label" % info),
            path("<path:object_id>/restore/", wrap(self.restore_view), name="%s_%s_restore" % info),
            path("<path:object_id>/request/", wrap(self.request_view), name="%s_%s_request" % info),
            path("<path:object_id>/rollout/", wrap(self.rollout_view), name="%s_%s_rollout" % info),
        ] + super().get_urls()

    def _url(self, name: str, obj: VersionedEntry) -> str:
        return reverse(f"admin:{self.opts.app_label}_{self.opts.model_name}_{name}", args=[quote(obj.pk)])

    def _entry(self, request: HttpRequest, object_id: str) -> VersionedEntry:
        obj = self.get_object(request, unquote(object_id))
        if obj is None:
            raise Http404(_("No %(thing)s with id %(id)r.") % {"thing": self.opts.verbose_name, "id": object_id})
        if not self.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        return obj

    def _context(self, request: HttpRequest, obj: VersionedEntry, title: str, **extra: Any) -> dict[str, Any]:
        return {
            **self.admin_site.each_context(request),
            "title": title,
            "subtitle": obj.key,
            "opts": self.opts,
            "original": obj,
            "entry_kind": obj.kind,
            "can_publish": services.can_publish(request.user, obj),
            "urls": {
                name: self._url(name, obj)
                for name in ("change", "history", "preview", "diff", "publish", "label", "restore", "request", "rollout")
            },
            "can_change": self.has_change_permission(request, obj),
            **extra,
        }

    def _denied(self, request: HttpRequest, obj: VersionedEntry, message: str) -> HttpResponse:
        context = self._context(request, obj, _("Not allowed"), message=message)
        return TemplateResponse(request, "admin/registry/denied.html", context, status=403)

    # preview ---------------------------------------------------------------------------------

    def preview_context(self, request: HttpRequest, obj: VersionedEntry) -> dict[str, Any]:
        raise NotImplementedError

    def preview_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Render the current draft exactly as a client would get it. Never writes anything."""
        obj = self._entry(request, object_id)
        context = self._context(request, obj, _("Preview of the draft of %(key)s") % {"key": obj.key},
                                **self.preview_context(request, obj))
        return TemplateResponse(request, self.preview_template, context)

    # diff ------------------------------------------------------------------------------------

    def _side(self, obj: VersionedEntry, ref: str, payloads: Payloads) -> tuple[str, dict[str, Any] | None]:
        """One side of the compare page; a draft's unpublished texts go into `payloads` for the diff."""
        if ref == "draft":
            return _("current draft"), snapshot_of(obj, payloads)
        if ref.startswith("label:"):
            name = ref.split(":", 1)[1]
            try:
                label_name_validator(name)
            except ValidationError:
                raise Http404(_("%(key)s has no label with that name.") % {"key": obj.key}) from None
            label = obj.labels.filter(name=name).select_related("version").first()
            if label is None:
                return _("%(label)s (not set: nothing served)") % {"label": name}, None
            return _("%(label)s (v%(number)s)") % {"label": name, "number": label.version.number}, label.version.snapshot
        number = ref.lstrip("v")
        version = obj.versions.filter(number=int(number)).first() if number.isdigit() else None
        if version is None:
            raise Http404(_("%(key)s has no version %(version)s.") % {"key": obj.key, "version": ref})
        return f"v{version.number}", version.snapshot

    def diff_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._entry(request, object_id)
        a = request.GET.get("a") or f"label:{PRODUCTION}"
        b = request.GET.get("b") or "draft"
        payloads: Payloads = {}
        a_name, a_snap = self._side(obj, a, payloads)
        b_name, b_snap = self._side(obj, b, payloads)
        choices = [("draft", _("current draft"))]
        choices += [(f"label:{label.name}", _("label %(label)s (v%(number)s)") % {"label": label.name,
                                                                               "number": label.version.number})
                    for label in obj.labels.all()]
        if not any(value == f"label:{PRODUCTION}" for value, _name in choices):
            choices.append((f"label:{PRODUCTION}", _("label production (not set)")))
        choices += [(f"v{v.number}", _("v%(number)s — %(note)s") % {"number": v.number, "note": v.change_note[:40]})
                    for v in obj.versions.all()]
        context = self._context(
            request, obj, _("Compare %(a)s with %(b)s") % {"a": a_name, "b": b_name},
            a=a, b=b, a_name=a_name, b_name=b_name, choices=choices,
            diff=build(obj.kind, a_snap, b_snap, before_name=a_name, after_name=b_name,
                       load=diff_loader(payloads)),
        )
        return TemplateResponse(request, "admin/registry/diff.html", context)

    # history ---------------------------------------------------------------------------------

    def history_view(self, request, object_id, extra_context=None):
        """Versions, labels, audit entries and fetch counts of one entry (replaces the stock log)."""
        obj = self._entry(request, object_id)
        versions = list(obj.versions.all())
        labels = list(obj.labels.select_related("version"))
        by_version: dict[int, list[str]] = {}
        for label in labels:
            by_version.setdefault(label.version.number, []).append(label.name)
        rows = [{"version": v, "labels": by_version.get(v.number, [])} for v in versions]
        label_names = list(dict.fromkeys([PRODUCTION, *(label.name for label in labels)]))
        context = self._context(
            request, obj, _("History of %(key)s") % {"key": obj.key},
            rows=rows, labels=labels, label_names=label_names,
            audit_entries=AuditEntry.objects.filter(entry_kind=obj.kind, entry_id=obj.pk).select_related("actor")[:200],
            fetches=FetchCounter.objects.filter(entry_kind=obj.kind, entry_key=obj.key)[:200],
            by_client=served_by_client(obj), by_version=served_by_version(obj),
            rollouts=Rollout.objects.filter(entry_kind=obj.kind, entry_id=obj.pk),
            pending_reviews=ReviewRequest.objects.filter(entry_kind=obj.kind, entry_id=obj.pk, status="pending"),
            can_roll_back=can_roll_back(obj),
            **(extra_context or {}),
        )
        return TemplateResponse(request, "admin/registry/history.html", context)

    # publish ---------------------------------------------------------------------------------

    def publish_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        obj = self._entry(request, object_id)
        if not services.can_publish(request.user, obj):
            return self._denied(request, obj, _("You may edit drafts but not publish them. Ask a publisher."))
        label_names = [label.name for label in obj.labels.all()]
        protected = [label.name for label in obj.labels.all() if label.protected]
        protected += [name for name in services.protected_label_names() if name not in label_names]
        form = PublishForm(request.POST or None, label_names=label_names, protected=protected,
                           can_override=services.can_override(request.user))
        if request.method == "POST" and form.is_valid():
            try:
                version, filed = self._publish_or_request(request, obj, form)
            except PublishPermissionDenied as exc:
                return self._denied(request, obj, exc.message)
            except RegistryError as exc:
                add_refusal(form, exc)
            else:
                self._report_publish(request, obj, version, form, filed)
                return HttpResponseRedirect(self._url("history", obj))
        latest = obj.versions.first()
        report = validate_entry(obj)
        payloads: Payloads = {}
        draft = snapshot_of(obj, payloads)
        context = self._context(
            request, obj, _("Publish %(key)s") % {"key": obj.key},
            form=form, report=report, latest=latest,
            diff=build(obj.kind, latest.snapshot if latest else None, draft,
                       before_name=f"v{latest.number}" if latest else _("nothing published"),
                       after_name=_("draft"), load=diff_loader(payloads)),
        )
        return TemplateResponse(request, "admin/registry/publish.html", context)

    def _publish_or_request(self, request: HttpRequest, obj: VersionedEntry,
                            form: PublishForm) -> tuple[EntryVersion, list[ReviewRequest]]:
        """Publish; protected labels are moved only with the override, else a review request is filed for each."""
        return reviews.publish_or_request(obj, acting_user=request.user, note=form.cleaned_data["note"],
                                          labels=form.chosen_labels(),
                                          override_reason=form.cleaned_data.get("override_reason"))

    def _report_publish(self, request: HttpRequest, obj: VersionedEntry, version: EntryVersion,
                        form: PublishForm, filed: list[ReviewRequest]) -> None:
        moved = [name for name in form.chosen_labels() if name not in {r.label for r in filed}]
        messages.success(request, _("Published %(key)s as v%(number)s (%(labels)s).") % {
            "key": obj.key, "number": version.number, "labels": ", ".join(moved) or _("no labels moved")})
        for review in filed:
            messages.warning(request, _("'%(label)s' is protected, so it still serves what it served before. "
                                        "Review request #%(pk)s was filed: another publisher must approve it "
                                        "in the review queue.") % {"label": review.label, "pk": review.pk})

    # request publication (editors) -------------------------------------------------------------

    def request_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Ask a publisher to release the current draft (or ?version=N) on a label."""
        obj = self._entry(request, object_id)
        if not reviews.can_request(request.user, obj):
            return self._denied(request, obj, _("You may not change this entry, so you may not request its release."))
        data = request.POST if request.method == "POST" else request.GET
        number = str(data.get("version") or "")
        version = obj.versions.filter(number=int(number)).first() if number.isdigit() else None
        form = ReviewRequestForm(request.POST if request.method == "POST" else None,
                                 initial={"label": data.get("label") or PRODUCTION})
        if request.method == "POST" and form.is_valid():
            try:
                review = reviews.request_publication(
                    obj, acting_user=request.user, note=form.cleaned_data["note"], label=form.cleaned_data["label"],
                    version_number=version.number if version else None, percent=form.cleaned_data.get("percent"),
                )
            except RegistryError as exc:
                add_refusal(form, exc)
            else:
                messages.success(request, _("Review request #%(pk)s was filed: a publisher other than you will "
                                            "approve or reject it. You can follow it in the review queue.")
                                 % {"pk": review.pk})
                return HttpResponseRedirect(reverse("admin:registry_reviewrequest_change", args=[review.pk]))
        label_name = (form.data.get("label") if form.is_bound else form.initial.get("label")) or PRODUCTION
        current = obj.labels.filter(name=label_name).select_related("version").first()
        payloads: Payloads = {}
        after = version.snapshot if version else snapshot_of(obj, payloads)
        context = self._context(
            request, obj, _("Request the release of %(key)s") % {"key": obj.key}, form=form, version=version,
            current=current,
            report=None if version else validate_entry(obj),
            diff=build(obj.kind, current.version.snapshot if current else None, after,
                       before_name=_("%(label)s now (v%(number)s)") % {
                           "label": label_name, "number": current.version.number} if current else _("nothing"),
                       after_name=f"v{version.number}" if version else _("draft"),
                       load=diff_loader(payloads)),
        )
        return TemplateResponse(request, "admin/registry/request.html", context)

    # rollout -----------------------------------------------------------------------------------

    def rollout_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Start, change, complete or stop a percentage rollout; shows progress of the running ones."""
        obj = self._entry(request, object_id)
        can_publish = services.can_publish(request.user, obj)
        running = list(Rollout.objects.filter(entry_kind=obj.kind, entry_id=obj.pk))
        first = running[0] if running else None
        label_names = [label.name for label in obj.labels.all()]
        seen = json.dumps({name: rollouts.state_of(obj, name) for name in label_names})
        initial = {"label": request.GET.get("label") or (first.label if first else PRODUCTION),
                   "version": request.GET.get("version") or (first.candidate_version if first else None),
                   "percent": first.percent if first else 10, "seen": seen}
        form = RolloutForm(request.POST if request.method == "POST" else None, initial=initial,
                           can_override=services.can_override(request.user),
                           labels=label_names, versions=version_choices(obj))
        if request.method == "POST":
            if not can_publish:
                return self._denied(request, obj, _("You may not change rollouts. Ask a publisher, or request a "
                                                    "review with a percentage."))
            if form.is_valid():
                data = form.cleaned_data
                try:
                    result = rollouts.set_rollout(
                        obj, label=data["label"], version_number=data["version"], percent=data["percent"],
                        acting_user=request.user, note=data["note"], override_reason=data.get("override_reason"),
                        if_match=form.seen_state(data["label"]),
                    )
                except RegistryError as exc:
                    form.add_error(None, exc.message)
                    if isinstance(exc, RolloutConflict):  # the page now shows the current state: resubmit to apply
                        form.data = form.data.copy()
                        form.data["seen"] = seen
                else:
                    if result is not None:
                        messages.success(request, _("v%(number)s now goes to %(percent)s%% of the clients of "
                                                    "'%(label)s'.") % {"number": result.candidate_version,
                                                                       "percent": result.percent, "label": result.label})
                    elif data["percent"] == 100:
                        messages.success(request, _("Rollout complete: '%(label)s' serves v%(number)s.")
                                         % {"label": data["label"], "number": data["version"]})
                    else:
                        messages.success(request, _("Rollout stopped: every client of '%(label)s' gets the "
                                                    "label's version again.") % {"label": data["label"]})
                    return HttpResponseRedirect(self._url("rollout", obj))
        context = self._context(
            request, obj, _("Percentage rollout of %(key)s") % {"key": obj.key}, form=form, can_publish=can_publish,
            progress=[rollout_progress(obj, rollout) for rollout in running],
            labels=list(obj.labels.select_related("version")), versions=list(obj.versions.all()[:20]),
        )
        return TemplateResponse(request, "admin/registry/rollout.html", context)

    # move label / roll back ------------------------------------------------------------------

    def label_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirm, then point a label at an existing version (backwards = roll back)."""
        obj = self._entry(request, object_id)
        if not services.can_publish(request.user, obj):
            return self._denied(request, obj, _("You may edit drafts but not move labels or roll back. Ask a publisher."))
        data = request.POST if request.method == "POST" else request.GET
        label_name = data.get("label") or PRODUCTION
        current = obj.labels.filter(name=label_name).select_related("version").first()
        try:
            target_number = int(data.get("version") or 0)
        except ValueError:
            target_number = 0
        if not target_number and current is not None:  # "roll back" without a version: the one before
            older = obj.versions.filter(number__lt=current.version.number).first()
            target_number = older.number if older else 0
        target = obj.versions.filter(number=target_number).first()
        if target is None:
            messages.error(request, _("%(key)s has no version to point '%(label)s' at.") % {"key": obj.key, "label": label_name})
            return HttpResponseRedirect(self._url("history", obj))
        rollback = current is not None and target.number < current.version.number
        # An incident rollback (an older version this protected label served before) needs no second publisher.
        incident = services.is_incident_rollback(obj, label_name, target.number)
        protected = services.is_protected(obj, label_name) and not incident
        initial = {"label": label_name, "version": target.number}
        form = LabelMoveForm(request.POST if request.method == "POST" else None, initial=initial, rollback=rollback,
                             can_override=protected and services.can_override(request.user))
        if request.method == "POST" and form.is_valid():
            override_reason = form.cleaned_data.get("override_reason") or None
            try:
                if protected and not override_reason:
                    # Four eyes: file a review instead of moving the protected label.
                    review = reviews.request_publication(
                        obj, acting_user=request.user, label=form.cleaned_data["label"],
                        version_number=form.cleaned_data["version"],
                        # Stored and sent to webhooks: English whatever the admin speaks (like every audit note).
                        note=form.cleaned_data["note"] or f"Point '{label_name}' at v{target.number}.",
                    )
                elif rollback:
                    services.rollback(obj, acting_user=request.user, note=form.cleaned_data["note"],
                                      label=form.cleaned_data["label"], to_version=form.cleaned_data["version"],
                                      override_reason=override_reason)
                else:
                    services.move_label(obj, acting_user=request.user, note=form.cleaned_data["note"],
                                        label=form.cleaned_data["label"], version_number=form.cleaned_data["version"],
                                        override_reason=override_reason)
            except PublishPermissionDenied as exc:
                return self._denied(request, obj, exc.message)
            except RegistryError as exc:
                form.add_error(None, exc.message)
            else:
                if protected and not override_reason:
                    messages.warning(request, _("'%(label)s' is protected: nothing moved yet. Review request "
                                                "#%(pk)s was filed; another publisher must approve it.")
                                     % {"label": label_name, "pk": review.pk})
                else:
                    done = (_("Rolled back '%(label)s' of %(key)s to v%(number)s.") if rollback
                            else _("Moved '%(label)s' of %(key)s to v%(number)s.")) % {
                        "label": label_name, "key": obj.key, "number": target.number}
                    if incident and not override_reason:
                        done += " " + _("It is recorded as an incident rollback; the other publishers are told.")
                    messages.success(request, done)
                return HttpResponseRedirect(self._url("history", obj))
        current_name = f"v{current.version.number}" if current else _("nothing")
        title = (_("Roll back label '%(label)s' of %(key)s to v%(number)s") if rollback
                 else _("Move label '%(label)s' of %(key)s to v%(number)s"))
        context = self._context(
            request, obj, title % {"label": label_name, "key": obj.key, "number": target.number},
            form=form, label_name=label_name, current=current, target=target, rollback=rollback, protected=protected,
            incident=incident,
            diff=build(obj.kind, current.version.snapshot if current else None, target.snapshot,
                       before_name=_("now (%(version)s)") % {"version": current_name},
                       after_name=_("after (v%(number)s)") % {"number": target.number}, load=diff_loader()),
        )
        return TemplateResponse(request, "admin/registry/label.html", context)

    # restore the draft from a version --------------------------------------------------------

    def restore_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """Confirm, then overwrite the draft with a published version's content (audited)."""
        obj = self._entry(request, object_id)
        if not self.has_change_permission(request, obj):
            raise PermissionDenied
        data = request.POST if request.method == "POST" else request.GET
        number = data.get("version", "")
        version = obj.versions.filter(number=int(number)).first() if number.isdigit() else None
        if version is None:
            raise Http404(_("%(key)s has no version %(version)r.") % {"key": obj.key, "version": number})
        if request.method == "POST":
            with transaction.atomic():
                drafts.restore_draft(obj, version.number, acting_user=request.user,
                                     note=(request.POST.get("note") or "").strip())
            messages.success(request, _("The draft of %(key)s now matches v%(number)s. Publish it to serve it.")
                             % {"key": obj.key, "number": version.number})
            return HttpResponseRedirect(self._url("change", obj))
        payloads: Payloads = {}
        context = self._context(
            request, obj, _("Restore the draft of %(key)s from v%(number)s") % {"key": obj.key, "number": version.number},
            version=version,
            diff=build(obj.kind, snapshot_of(obj, payloads), version.snapshot,
                       before_name=_("current draft"), after_name=f"v{version.number}",
                       load=diff_loader(payloads)),
        )
        return TemplateResponse(request, "admin/registry/restore.html", context)


def data_uri(mime_type: str, data: bytes | memoryview | None) -> str:
    import base64

    return f"data:{mime_type};base64,{base64.b64encode(bytes(data or b'')).decode('ascii')}"


def stored_thumbnail(row: Any) -> str:
    """Thumbnail of a draft row's stored bytes (a resource or message), or a warning when they are gone."""
    if not row.data_sha256:
        return "—"
    mime_type = row.mime_type or "application/octet-stream"
    if not mime_type.startswith(("image/", "audio/")):
        return format_html(_("{} file, {} bytes, sha256 {}"), mime_type, f"{row.data_size:,}", row.data_sha256[:12])
    try:
        data = row.data
    except ContentMissing as exc:
        return format_html('<strong class="errornote">{}</strong>', exc.message)
    return thumbnail_html(mime_type, data)


def thumbnail_html(mime_type: str, data: bytes | memoryview | None) -> str:
    if not data:
        return "—"
    mime_type = mime_type or "application/octet-stream"
    if mime_type.startswith("image/"):
        return format_html('<img src="{}" alt="{}" style="max-height:96px;max-width:160px">',
                           data_uri(mime_type, data), _("thumbnail"))
    if mime_type.startswith("audio/"):
        return format_html('<audio controls src="{}"></audio>', data_uri(mime_type, data))
    return format_html(_("{} file, {} bytes"), mime_type, f"{len(bytes(data)):,}")
