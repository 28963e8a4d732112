"""System checks: a malformed WEBHOOKS_ALLOWED_NETWORKS is reported by `manage.py check`,
`migrate` and `runserver` at start-up instead of at the first delivery."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.exceptions import ImproperlyConfigured

from webhooks.addresses import allowed_networks


def check_allowed_networks(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    try:
        allowed_networks()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), hint='A comma-separated list of networks, e.g. "10.20.0.0/16,::1/128".',
                             id="webhooks.E001")]
    return []
