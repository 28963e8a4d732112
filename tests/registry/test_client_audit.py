"""Creating, re-scoping, revoking an MCP client and re-issuing its token are audited."""

from __future__ import annotations

import pytest
from django.urls import reverse

from registry.models import AuditEntry, McpClient
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def test_creating_rescoping_and_revoking_a_client_in_the_admin_is_audited(client):
    publisher = make_user("Publishers")
    client.force_login(publisher)
    add = client.post(reverse("admin:registry_mcpclient_add"),
                      {"name": "support-bot", "label": "production", "scope_tags": "", "active": "on",
                       "fetches-TOTAL_FORMS": "0", "fetches-INITIAL_FORMS": "0"})
    assert add.status_code == 200  # the one-time token page
    bot = McpClient.objects.get(name="support-bot")
    created = AuditEntry.objects.get(entry_kind="client", action="client_changed")
    assert (created.actor, created.entry_key, created.entry_id) == (publisher, "support-bot", bot.pk)
    assert bot.token_prefix in created.note and {"field": "scope_tags", "before": None, "after": ""} in created.changes

    change = client.post(reverse("admin:registry_mcpclient_change", args=[bot.pk]),
                         {"name": "support-bot", "label": "staging", "scope_tags": "billing",
                          "fetches-TOTAL_FORMS": "0", "fetches-INITIAL_FORMS": "0"})
    assert change.status_code == 302, change.content[:2000]
    edit = AuditEntry.objects.filter(entry_kind="client").latest("id")
    assert edit.changes == [{"field": "label", "before": "production", "after": "staging"},
                            {"field": "scope_tags", "before": "", "after": "billing"},
                            {"field": "active", "before": True, "after": False}]


def test_regenerating_a_token_is_audited_without_the_token(client):
    publisher = make_user("Publishers")
    client.force_login(publisher)
    bot = McpClient.objects.create(name="bot", token_hash="x" * 64)
    client.post(reverse("admin:registry_mcpclient_changelist"),
                {"action": "regenerate_token", "_selected_action": [bot.pk]})
    bot.refresh_from_db()
    row = AuditEntry.objects.get(entry_kind="client", entry_key="bot")
    assert "new token" in row.note and bot.token_prefix in row.note and row.actor == publisher
