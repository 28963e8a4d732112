"""MCP clients: tokens shown once and stored hashed, revocation, and what each was served."""

from __future__ import annotations

import secrets

from django.contrib import admin
from django.template.response import TemplateResponse
from django.utils.html import format_html, format_html_join
from django.utils.translation import gettext as _
from django.utils.translation import gettext_lazy

from registry.admin.access import InternalsMixin, ReadOnlyAdminMixin
from registry.admin.fetch_stats import client_receives
from registry.admin.lookups import DeclaredFiltersOnlyMixin
from registry.models import FetchCounter, McpClient
from registry.serving import clients


class FetchCounterInline(ReadOnlyAdminMixin, admin.TabularInline):
    model = FetchCounter
    fk_name = "client"
    extra = 0
    can_delete = False
    fields = ("entry_kind", "entry_key", "version", "label", "count", "first_at", "last_at")
    readonly_fields = fields
    verbose_name_plural = gettext_lazy("What this client was served")


@admin.register(McpClient)
class McpClientAdmin(DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    list_display = ["name", "label", "scope_tags", "active", "expires_at", "token_prefix", "last_seen_at"]
    list_filter = ["active", "label"]
    search_fields = ["name", "description", "scope_tags"]
    fields = ["name", "description", "label", "scope_tags", "active", "expires_at",
              "token_prefix", "created_at", "last_seen_at", "receives_now"]
    readonly_fields = ["token_prefix", "created_at", "last_seen_at", "receives_now"]
    inlines = [FetchCounterInline]
    actions = ["regenerate_token"]

    @admin.display(description=gettext_lazy("What it receives now"))
    def receives_now(self, obj: McpClient) -> str:
        """Computed from the served catalog for its label, scope and rollout buckets (not from the counters)."""
        if obj is None or obj.pk is None:
            return "—"
        rows = client_receives(obj)
        if not rows:
            return _("Nothing: no published entry is visible to this client.")
        body = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>v{}</td><td>{}</td><td>{}</td></tr>",
            ((r["kind"], r["key"], r["version"], r["label"],
              _("in the rollout (%(rollout)s)") % {"rollout": r["rollout"]} if r["in_rollout"] else (
                  _("not in the rollout (%(rollout)s)") % {"rollout": r["rollout"]} if r["rollout"] else ""))
             for r in rows),
        )
        return format_html("<table><thead><tr><th>{}</th><th>{}</th><th>{}</th><th>{}</th>"
                           "<th>{}</th></tr></thead><tbody>{}</tbody></table>",
                           _("Kind"), _("Entry"), _("Version"), _("Label"), _("Rollout"), body)

    def save_model(self, request, obj, form, change):
        if change:
            before = clients.client_state(McpClient.objects.get(pk=obj.pk))
            super().save_model(request, obj, form, change)
            clients.audit_client_change(obj, before=before, acting_user=request.user)
            clients.forget_cached_tokens()  # a revoked or re-scoped token takes effect at once
            return
        obj.token_hash = secrets.token_hex(32)  # replaced by issue_token; never a usable token
        request._registry_new_tokens = [(obj, clients.issue_token(obj))]
        clients.audit_client_change(obj, before=None, acting_user=request.user, note="Created the client and "
                                    f"issued its token ({obj.token_prefix}…)")  # the audit log stays in English

    def _token_page(self, request, issued):
        context = {
            **self.admin_site.each_context(request),
            "title": _("Copy the token now"),
            "opts": self.opts,
            "issued": issued,
        }
        return TemplateResponse(request, "admin/registry/mcpclient/token.html", context)

    def response_add(self, request, obj, post_url_continue=None):
        issued = getattr(request, "_registry_new_tokens", None)
        if issued:
            return self._token_page(request, issued)
        return super().response_add(request, obj, post_url_continue)

    @admin.action(description=gettext_lazy("Regenerate token (the old one stops working)"), permissions=["change"])
    def regenerate_token(self, request, queryset):
        issued = []
        for client in queryset:
            issued.append((client, clients.issue_token(client)))
            clients.audit_client_change(client, before=clients.client_state(client), acting_user=request.user,
                                        note=f"Issued a new token ({client.token_prefix}…); the old one stops working")
        return self._token_page(request, issued)


@admin.register(FetchCounter)
class FetchCounterAdmin(InternalsMixin, ReadOnlyAdminMixin, DeclaredFiltersOnlyMixin, admin.ModelAdmin):
    list_display = ["client_name", "entry_kind", "entry_key", "version", "label", "count", "first_at", "last_at"]
    list_filter = ["entry_kind", "label", "client_name"]
    search_fields = ["entry_key", "client_name"]
