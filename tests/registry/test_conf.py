"""The registry's settings object: defaults, REGISTRY overrides, reloading, the older key's place."""

import pytest

from mcp_endpoint.settings import mcp_settings
from registry.conf import DEFAULTS, mcp_public_url, registry_settings


def test_defaults_apply_and_a_changed_setting_is_read_again(settings):
    settings.REGISTRY = {k: v for k, v in settings.REGISTRY.items() if k != "CONTENT_CACHE_BYTES"}
    assert DEFAULTS["CONTENT_CACHE_BYTES"] == registry_settings.CONTENT_CACHE_BYTES
    settings.REGISTRY = {**settings.REGISTRY, "PROTECTED_LABELS": ["production", "eu"]}
    assert registry_settings.PROTECTED_LABELS == ["production", "eu"]


def test_the_change_log_retention_is_still_read_from_mcp_endpoint_where_older_settings_put_it(settings):
    settings.REGISTRY = {k: v for k, v in settings.REGISTRY.items() if k != "CHANGE_LOG_RETENTION_SECONDS"}
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "CHANGE_LOG_RETENTION_SECONDS": 60}
    assert registry_settings.CHANGE_LOG_RETENTION_SECONDS == 60
    settings.REGISTRY = {**settings.REGISTRY, "CHANGE_LOG_RETENTION_SECONDS": 120}
    assert registry_settings.CHANGE_LOG_RETENTION_SECONDS == 120


@pytest.mark.parametrize("endpoint", [None, {}, {"PUBLIC_URL": ""}, {"PUBLIC_URL": "https://r.example/mcp"}])
def test_the_endpoints_public_url_reads_the_same_below_the_endpoint_as_in_it(settings, endpoint):
    """E-mail links and OAuth's resource URL read MCP_ENDPOINT["PUBLIC_URL"] through conf.mcp_public_url."""
    if endpoint is None:
        del settings.MCP_ENDPOINT
    else:
        settings.MCP_ENDPOINT = endpoint
    assert mcp_public_url() == mcp_settings.PUBLIC_URL
