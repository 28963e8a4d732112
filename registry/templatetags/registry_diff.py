"""`{{ audit_entry|change_summary }}`: the one-line readable change of an audit entry;
`{{ audit_entry|audit_versions }}`: its versions in words."""

from __future__ import annotations

from django import template

from registry.admin.audit import versions_text
from registry.admin.diff import recorded
from registry.models import AuditEntry

register = template.Library()


@register.filter
def change_summary(entry: AuditEntry) -> str:
    """'Message 2 text changed; Title changed' (plain text: the template escapes it)."""
    return recorded.change_summary(entry.entry_kind, entry.changes)


@register.filter
def audit_versions(entry: AuditEntry) -> str:
    """'v1 → v2', or for a review row 'asked for the draft (production served v1)' (plain text)."""
    return versions_text(entry)
