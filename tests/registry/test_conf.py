"""The registry's settings object: defaults, REGISTRY overrides, reloading, the older key's place."""

from registry.conf import registry_settings


def test_defaults_apply_and_a_changed_setting_is_read_again(settings):
    assert settings.REGISTRY["CONTENT_CACHE_BYTES"] == registry_settings.CONTENT_CACHE_BYTES
    settings.REGISTRY = {**settings.REGISTRY, "PROTECTED_LABELS": ["production", "eu"]}
    assert registry_settings.PROTECTED_LABELS == ["production", "eu"]


def test_the_change_log_retention_is_still_read_from_mcp_endpoint_where_older_settings_put_it(settings):
    settings.REGISTRY = {k: v for k, v in settings.REGISTRY.items() if k != "CHANGE_LOG_RETENTION_SECONDS"}
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "CHANGE_LOG_RETENTION_SECONDS": 60}
    assert registry_settings.CHANGE_LOG_RETENTION_SECONDS == 60
    settings.REGISTRY = {**settings.REGISTRY, "CHANGE_LOG_RETENTION_SECONDS": 120}
    assert registry_settings.CHANGE_LOG_RETENTION_SECONDS == 120
