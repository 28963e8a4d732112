"""OAuth connections and group defaults in the admin, next to the MCP clients.

django-oauth-toolkit registers its own Application / AccessToken / RefreshToken / Grant pages;
these show which MCP client each (application, user) is served as and what new users get."""

from django.contrib import admin

from .models import GroupDefault, OAuthConnection


@admin.register(GroupDefault)
class GroupDefaultAdmin(admin.ModelAdmin):
    list_display = ("group", "label", "scope_tags", "priority")


@admin.register(OAuthConnection)
class OAuthConnectionAdmin(admin.ModelAdmin):
    list_display = ("client", "application", "user", "created_at")
    list_select_related = ("client", "application", "user")
    readonly_fields = ("application", "user", "client", "created_at")
    search_fields = ("client__name", "user__username", "application__name")

    def has_add_permission(self, request, obj=None) -> bool:  # made by grants, not by hand
        return False
