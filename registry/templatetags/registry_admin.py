"""Template tags of the registry's admin pages."""

from __future__ import annotations

from typing import Any

from django import template

from registry.admin.dashboard import dashboard

register = template.Library()


@register.inclusion_tag("admin/registry/_dashboard.html", takes_context=True)
def registry_dashboard(context: dict[str, Any]) -> dict[str, Any]:
    """The personal panels of the admin home page (reviews waiting, my requests, my entries)."""
    request = context.get("request")
    return dashboard(request.user) if request is not None else {}
