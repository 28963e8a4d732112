"""The admin for prompt editors, publishers and auditors; one module per concept."""

from django.contrib import admin

from registry.admin import audit, clients, preferences, prompts, resources, reviews, versions  # noqa: F401  (registers the ModelAdmins)

admin.site.site_header = "MCP Registry"
admin.site.site_title = "MCP Registry"
admin.site.index_title = "Prompts, resources and their releases"
