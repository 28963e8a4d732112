"""The review queue (four eyes for protected labels) and the list of running rollouts.

Nothing here writes directly: approving, rejecting and withdrawing go through
`registry.release.reviews`, which re-checks permission, self-approval and staleness, so a crafted POST
meets the same rules as the buttons.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.core.exceptions import PermissionDenied
from django.db.models import Case, IntegerField, Value, When
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django.utils.translation import gettext, gettext_lazy

from registry.admin.access import InternalsMixin, ReadOnlyAdminMixin
from registry.admin.badges import when_text
from registry.admin.diff.sections import build
from registry.admin.downstream import downstream
from registry.admin.forms.releases import ReviewDecisionForm
from registry.admin.lookups import DeclaredFiltersOnlyMixin, EntryKindFilter
from registry.authoring.snapshots import diff_loader
from registry.errors import InvalidEntry, RegistryError
from registry.kinds import KINDS, kind_name
from registry.models import ReviewRequest, ReviewStatus, Rollout, Snippet
from registry.release import discussion, reviews, schedules

_ = gettext


def entry_admin_url(kind: str, entry_id: int, page: str = "change") -> str:
    model = KINDS[kind].entry_model
    return reverse(f"admin:registry_{model._meta.model_name}_{page}", args=[entry_id])


class StatusFilter(admin.SimpleListFilter):
    title = gettext_lazy("status")
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return ReviewStatus.choices

    def queryset(self, request, queryset):
        return queryset.filter(status=self.value()) if self.value() else queryset


def status_text(review: ReviewRequest, stale: str) -> str:
    """The status of `review` as the queue and the review page show it: an open request that
    `reviews.staleness` finds stale says so, rather than waiting for a reviewer who cannot approve it."""
    if stale and review.is_pending:
        return _("Stale: it can no longer be approved as asked")
    if stale and review.status == ReviewStatus.SCHEDULED:
        return _("Approved, but stale: it cannot go live as approved")
    return str(review.get_status_display())


def status_html(review: ReviewRequest, stale: str) -> str:
    """`status_text` marked up: a stale request as a stale badge (its reason on hover), a pending one in bold."""
    if stale and review.is_open:
        return format_html('<span class="registry-badge registry-badge-stale" title="{}">{}</span>',
                           stale, status_text(review, stale))
    if review.is_pending:
        return format_html("<strong>{}</strong>", status_text(review, stale))
    return status_text(review, stale)


class ReviewChangeList(ChangeList):
    """The review queue: whether each open request on the page is stale is read for the whole page
    at once (`reviews.staleness_of`, the one rule), in a fixed number of queries."""

    def get_results(self, request):
        super().get_results(request)
        rows = list(self.result_list)  # evaluated once here; the template iterates the same cache
        stale = reviews.staleness_of(rows)
        for row in rows:
            row._registry_stale = stale.get(row.pk, "")


@admin.register(ReviewRequest)
class ReviewRequestAdmin(ReadOnlyAdminMixin, DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    # Requests are filed from an entry's page ("Request publication…") and decided on the review page.
    list_display = ["number", "entry_link", "label", "what_is_asked", "requester", "status_badge",
                    "created_at", "decider"]
    list_filter = [StatusFilter, EntryKindFilter, "label"]
    search_fields = ["entry_key", "note", "requested_by_name", "decided_by_name"]
    list_display_links = ["number"]
    actions = ["approve_selected"]

    def get_queryset(self, request):
        pending_first = Case(When(status=ReviewStatus.PENDING, then=Value(0)), default=Value(1),
                             output_field=IntegerField())
        return super().get_queryset(request).annotate(_pending_first=pending_first).order_by(
            "_pending_first", "-created_at", "-id")

    def get_actions(self, request):
        actions = super().get_actions(request)
        if not any(request.user.has_perm(kind.publish_permission) for kind in KINDS.values()):
            actions.pop("approve_selected", None)
        return actions

    @admin.action(description=gettext_lazy("Approve selected requests (each is checked on its own)"))
    def approve_selected(self, request, queryset):
        """Approve each request through registry.release.reviews, so each meets the four-eyes and staleness rules."""
        for review in queryset.order_by("id"):
            try:
                reviews.approve(review, acting_user=request.user)
            except RegistryError as exc:
                messages.error(request, gettext("Review #%(pk)s was not approved: %(reason)s")
                               % {"pk": review.pk, "reason": exc.message})
            else:
                messages.success(request, gettext("Approved review #%(pk)s: '%(label)s' of %(key)s gets %(what)s.")
                                 % {"pk": review.pk, "label": review.label, "key": review.entry_key,
                                    "what": review.what_text})

    @admin.display(description="#", ordering="id")
    def number(self, obj: ReviewRequest) -> str:
        return f"#{obj.pk}"

    @admin.display(description=gettext_lazy("entry"), ordering="entry_key")
    def entry_link(self, obj: ReviewRequest) -> str:
        return format_html('<a href="{}">{} {}</a>', entry_admin_url(obj.entry_kind, obj.entry_id),
                           kind_name(obj.entry_kind), obj.entry_key)

    @admin.display(description=gettext_lazy("requested by"), ordering="requested_by_name")
    def requester(self, obj: ReviewRequest) -> str:
        return obj.requested_by_name

    @admin.display(description=gettext_lazy("decided by"), ordering="decided_by_name")
    def decider(self, obj: ReviewRequest) -> str:
        return obj.decided_by_name

    def changelist_view(self, request, extra_context=None):
        extra_context = {"title": _("Review queue: open a request to approve or reject it (pending first)"),
                         **(extra_context or {})}
        return super().changelist_view(request, extra_context)

    @admin.display(description=gettext_lazy("asks for"))
    def what_is_asked(self, obj: ReviewRequest) -> str:
        return obj.what_text

    @admin.display(description=gettext_lazy("status"), ordering="status")
    def status_badge(self, obj: ReviewRequest) -> str:
        stale = getattr(obj, "_registry_stale", None)
        return status_html(obj, reviews.staleness_of([obj]).get(obj.pk, "") if stale is None else stale)

    def get_changelist(self, request, **kwargs):
        return ReviewChangeList

    def change_view(self, request, object_id, form_url="", extra_context=None):
        """The review page: what would change, the note, and Approve / Reject / Withdraw."""
        review = ReviewRequest.objects.filter(pk=object_id).first() if str(object_id).isdigit() else None
        if review is None:
            raise Http404(_("No such review request."))
        if not self.has_view_permission(request, review):
            raise PermissionDenied
        form = ReviewDecisionForm(request.POST if request.method == "POST" else None)
        if request.method == "POST":
            decision = request.POST.get("decision", "")
            if form.is_valid():
                redirect_to = self._decide(request, review, decision, form)
                if not form.errors:
                    return HttpResponseRedirect(redirect_to)
            review.refresh_from_db()
        return TemplateResponse(request, "admin/registry/reviewrequest/review.html",
                                self._review_context(request, review, form))

    def _decide(self, request, review: ReviewRequest, decision: str, form: ReviewDecisionForm) -> str:
        """Carry out the button pressed through the services; returns where to go next (errors go on `form`)."""
        comment = form.cleaned_data["comment"]
        go_live_at = form.cleaned_data.get("go_live_at")
        page = reverse("admin:registry_reviewrequest_change", args=[review.pk])
        done = {
            "approve": lambda: reviews.approve(review, acting_user=request.user, comment=comment),
            "schedule": lambda: reviews.approve(review, acting_user=request.user, comment=comment,
                                                go_live_at=go_live_at),
            "reject": lambda: reviews.reject(review, acting_user=request.user, comment=comment),
            "withdraw": lambda: reviews.withdraw(review, acting_user=request.user),
            "changes": lambda: discussion.request_changes(review, acting_user=request.user, text=comment),
            "comment": lambda: discussion.comment(review, acting_user=request.user, text=comment),
            "cancel": lambda: schedules.cancel(review, acting_user=request.user, reason=comment),
            "reschedule": lambda: schedules.reschedule(review, acting_user=request.user,
                                                       go_live_at=go_live_at),  # type: ignore[arg-type]  # checked below
            "again": lambda: reviews.request_again(review, acting_user=request.user),
        }
        if decision not in done:
            form.add_error(None, _("Choose Approve, Reject or Withdraw."))
            return page
        if decision in ("schedule", "reschedule") and go_live_at is None:
            form.add_error("go_live_at", _("Choose when the release goes live."))
            return page
        try:
            result = done[decision]()
        except InvalidEntry as exc:
            for problem in exc.problems:
                form.add_error("go_live_at" if "go-live" in problem else "comment", problem)
            return page
        except RegistryError as exc:
            form.add_error(None, exc.message)
            return page
        when = when_text(go_live_at) if go_live_at is not None else ""
        texts = {
            "approve": _("Approved review #%(pk)s: '%(label)s' of %(key)s is updated and clients are notified."),
            "schedule": _("Approved review #%(pk)s: it goes live on '%(label)s' at %(when)s."),
            "reject": _("Rejected review #%(pk)s; nothing was changed."),
            "withdraw": _("Withdrew review #%(pk)s."),
            "changes": _("Asked for changes to review #%(pk)s; the requester is told."),
            "comment": _("Your comment is added to the discussion of review #%(pk)s."),
            "cancel": _("Cancelled the release of review #%(pk)s: it waits for a decision again."),
            "reschedule": _("The release of review #%(pk)s now goes live at %(when)s."),
            "again": _("Asked again as review #%(new)s, with the current draft."),
        }
        messages.success(request, texts[decision] % {"pk": review.pk, "label": review.label, "key": review.entry_key,
                                                     "when": when, "new": getattr(result, "pk", "")})
        if decision == "again":
            return reverse("admin:registry_reviewrequest_change", args=[result.pk])
        return page

    def _review_context(self, request, review: ReviewRequest, form: ReviewDecisionForm) -> dict:
        entry = reviews.entry_of(review)
        before = after = None
        stale = ""
        if entry is not None:
            base = entry.versions.filter(number=review.base_version).first() if review.base_version else None
            before = base.snapshot if base else None
            if review.version_number is not None:
                target = entry.versions.filter(number=review.version_number).first()
                after = target.snapshot if target else None
            else:
                after = review.snapshot
            if review.is_open:
                stale = reviews.staleness(review, entry)
        is_requester = review.requested_by_id is not None and review.requested_by_id == request.user.pk
        may_decide = reviews.can_decide(request.user, review, entry) if entry is not None else False
        schedule = review.schedules.order_by("-created_at", "-id").first()
        base_name = (_("%(label)s now (v%(number)s)") % {"label": review.label, "number": review.base_version}
                     if review.base_version else _("nothing"))
        downstream_ = None
        if isinstance(entry, Snippet):
            # A version asked for is a published number; a draft asked for is the text it froze.
            candidate = review.version_number if review.version_number is not None else (
                (review.snapshot or {}).get("text", ""))
            downstream_ = downstream(entry, review.label, candidate)
        return {
            **self.admin_site.each_context(request),
            "downstream": downstream_,
            "title": _("Review #%(pk)s: %(key)s → %(label)s") % {"pk": review.pk, "key": review.entry_key,
                                                                  "label": review.label},
            "opts": self.opts,
            "review": review,
            "entry": entry,
            "entry_url": entry_admin_url(review.entry_kind, review.entry_id) if entry else "",
            "form": form,
            "stale": stale,
            "status_text": status_text(review, stale),
            "is_requester": is_requester,
            "can_decide": review.is_pending and not is_requester and may_decide and not stale,
            "can_reject": review.is_pending and not is_requester and may_decide,
            "can_withdraw": review.is_pending and is_requester,
            "can_comment": review.is_open and (is_requester or may_decide),
            "can_ask_again": is_requester and ((review.is_pending and bool(stale))
                                               or review.status == ReviewStatus.FAILED),
            "schedule": schedule,
            "schedule_when": when_text(schedule.go_live_at) if schedule is not None else "",
            "can_cancel": schedule is not None and schedule.is_scheduled and (is_requester or may_decide),
            "can_reschedule": schedule is not None and schedule.is_scheduled and may_decide,
            "zone": timezone.get_current_timezone_name(),
            "comments": [{"comment": c, "when": when_text(c.created_at), "earlier": c.review_id != review.pk}
                         for c in discussion.discussion(review)],
            "diff": build(
                review.entry_kind, before, after,
                before_name=(_("Now (%(what)s)") % {"what": base_name} if review.base_version
                             else _("Now (nothing served)")),
                after_name=_("After approval (%(what)s)") % {"what": review.what_text},
                load=diff_loader(),
            ),
        }


@admin.register(Rollout)
class RolloutAdmin(InternalsMixin, ReadOnlyAdminMixin, DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    # Started from an entry's "Rollout…" page, through registry.release.rollouts.
    list_display = ["entry_link", "label", "candidate_version", "percent", "authority", "updated_by_name",
                    "updated_at"]
    list_filter = [EntryKindFilter, "label"]
    search_fields = ["entry_key"]

    @admin.display(description=gettext_lazy("entry"), ordering="entry_key")
    def entry_link(self, obj: Rollout) -> str:
        return format_html('<a href="{}">{} {}</a> (<a href="{}">{}</a>)',
                           entry_admin_url(obj.entry_kind, obj.entry_id), kind_name(obj.entry_kind), obj.entry_key,
                           entry_admin_url(obj.entry_kind, obj.entry_id, "rollout"), _("progress"))

    def change_view(self, request, object_id, form_url="", extra_context=None):
        rollout = Rollout.objects.filter(pk=object_id).first() if str(object_id).isdigit() else None
        if rollout is None:
            raise Http404(_("No such rollout (it may have been completed or stopped)."))
        return HttpResponseRedirect(entry_admin_url(rollout.entry_kind, rollout.entry_id, "rollout"))
