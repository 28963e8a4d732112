"""The admin for prompt editors, publishers and auditors; one module per concept."""

from django.contrib import admin
from django.utils.translation import gettext_lazy as _

from registry.admin import audit, clients, mail, owners, preferences, prompts, resources, reviews, snippets, versions  # noqa: F401  (registers the ModelAdmins)

admin.site.site_header = _("MCP Registry")
admin.site.site_title = _("MCP Registry")
admin.site.index_title = _("Prompts, resources and their releases")
# No public site to view: "/" leads back to the admin, so the "View site" link is left out.
admin.site.site_url = None
