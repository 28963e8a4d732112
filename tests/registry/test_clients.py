from datetime import timedelta

import pytest
from django.utils import timezone

from registry.models import McpClient
from registry.serving import clients


@pytest.mark.django_db
def test_token_is_returned_once_and_stored_only_as_a_hash():
    _client, raw = clients.create_client(name="desk", label="staging", scope_tags="billing")
    assert raw.startswith("mcpr_")
    stored = McpClient.objects.get(name="desk")
    assert raw not in (stored.token_hash, stored.token_prefix)
    assert stored.token_hash == clients.hash_token(raw)


@pytest.mark.django_db
def test_token_resolves_to_the_clients_label_and_scope():
    client, raw = clients.create_client(name="desk", label="staging", scope_tags="Billing, support")
    viewer = clients.load_viewer(raw)
    assert (viewer.label, viewer.scope_tags, viewer.client_id, viewer.client_name) == (
        "staging", frozenset({"billing", "support"}), client.pk, "desk")
    assert clients.cached_viewer(raw) == (True, viewer)


@pytest.mark.django_db
def test_unknown_revoked_and_expired_tokens_resolve_to_nothing():
    assert clients.load_viewer("mcpr_unknown") is None
    _, revoked = clients.create_client(name="revoked", active=False)
    assert clients.load_viewer(revoked) is None
    _, expired = clients.create_client(name="expired", expires_at=timezone.now() - timedelta(minutes=1))
    assert clients.load_viewer(expired) is None


@pytest.mark.django_db
def test_reissuing_a_token_invalidates_the_old_one():
    client, old = clients.create_client(name="desk")
    new = clients.issue_token(client)
    assert clients.load_viewer(old) is None
    assert clients.load_viewer(new).client_name == "desk"
