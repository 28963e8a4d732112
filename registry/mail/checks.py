"""System checks: e-mail that would link to nowhere is reported by `manage.py check`."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core import checks

from registry.mail.compose import FALLBACK_ORIGIN, public_origin


def check_public_url(app_configs: Any = None, **kwargs: Any) -> list[checks.CheckMessage]:
    if settings.EMAIL_BACKEND.endswith(("console.EmailBackend", "locmem.EmailBackend", "dummy.EmailBackend")):
        return []
    if not settings.EMAIL_HOST or settings.EMAIL_HOST == "localhost":
        return []  # no mail server configured (Django's default): nothing is likely to be delivered anyway
    if public_origin() != FALLBACK_ORIGIN:
        return []
    return [checks.Warning(
        "E-mail is sent, but neither REGISTRY_PUBLIC_URL nor MCP_PUBLIC_URL says where people reach the admin: "
        f"the links in e-mails point to {FALLBACK_ORIGIN}.",
        hint="Set REGISTRY_PUBLIC_URL, e.g. https://registry.example.com", id="registry.W101")]
