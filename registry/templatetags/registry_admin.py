"""Template tags of the registry's admin pages."""

from __future__ import annotations

from typing import Any

from django import template

from registry.admin.dashboard import dashboard
from registry.admin.home import home_groups
from registry.kinds import kind_name
from registry.models import ContentKind

register = template.Library()


@register.inclusion_tag("admin/registry/_home.html", takes_context=True)
def registry_home(context: dict[str, Any]) -> dict[str, Any]:
    """The home page's tables grouped by task, the internal ones behind one link (registry/admin/home.py)."""
    return {**home_groups(context.get("app_list") or []), "request": context.get("request")}


@register.inclusion_tag("admin/registry/_dashboard.html", takes_context=True)
def registry_dashboard(context: dict[str, Any]) -> dict[str, Any]:
    """The personal panels of the admin home page (reviews waiting, my requests, my entries)."""
    request = context.get("request")
    return dashboard(request.user) if request is not None else {}


@register.filter
def entry_kind_name(kind: str) -> Any:
    """'template' -> the model's verbose name in the reader's language ('Ressourcen-Vorlage');
    unknown kinds as given."""
    return kind_name(kind)


@register.filter
def content_kind_name(kind: str) -> Any:
    """A rendered message's MCP content type ('text', 'resource_link') in the reader's language, as
    the editor's Kind menu names it; an unknown type as given."""
    try:
        return ContentKind(kind).label
    except ValueError:
        return kind
