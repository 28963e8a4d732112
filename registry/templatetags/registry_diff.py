"""`{{ audit_entry|change_summary }}`: the one-line readable change of an audit entry."""

from __future__ import annotations

from django import template

from registry.admin.diff import recorded
from registry.models import AuditEntry

register = template.Library()


@register.filter
def change_summary(entry: AuditEntry) -> str:
    """'Message 2 text changed; Title changed' (plain text: the template escapes it)."""
    return recorded.change_summary(entry.entry_kind, entry.changes)
