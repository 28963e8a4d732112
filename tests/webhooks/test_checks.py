"""A malformed allow-list is reported at start-up, not at the first delivery."""

from __future__ import annotations

from webhooks.checks import check_allowed_networks


def test_a_malformed_allowed_network_is_a_system_check_error(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "10.0.0.0/8,10.0.0.300/32"
    [error] = check_allowed_networks()
    assert error.id == "webhooks.E001" and "10.0.0.300/32" in error.msg


def test_a_valid_allow_list_passes_the_check(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "10.0.0.0/8,::1/128"
    assert check_allowed_networks() == []
