"""Webhook URL checks: http(s) only, and never this server or its loopback neighbours."""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


def allow_loopback() -> bool:
    return bool(getattr(settings, "WEBHOOKS_ALLOW_LOOPBACK", False))


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").rstrip(".").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback or address.is_unspecified


def is_link_local_host(host: str) -> bool:
    """169.254.0.0/16 and fe80::/10: cloud metadata services live there; never a webhook receiver."""
    try:
        address = ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_link_local


def _matches_allowed_host(host: str) -> bool:
    """Is `host` one this server answers to (settings.ALLOWED_HOSTS, '*' excepted)?"""
    host = host.rstrip(".").lower()
    for pattern in settings.ALLOWED_HOSTS:
        pattern = pattern.lower()
        if pattern == "*":
            continue
        bare = pattern.strip("[]")
        if pattern.startswith("."):
            if host == pattern[1:] or host.endswith(pattern):
                return True
        elif host in (pattern, bare):
            return True
    return False


def validate_webhook_url(url: str) -> None:
    """Raise ValidationError (codes: scheme, host, self) unless `url` may receive webhooks."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError as exc:
        raise ValidationError("This is not a valid URL: %(error)s", code="invalid", params={"error": exc}) from exc
    if parts.scheme.lower() not in ("http", "https"):
        raise ValidationError(
            "Webhooks are sent over HTTP: the address must start with https:// (or http://), not %(scheme)s.",
            code="scheme", params={"scheme": f"{parts.scheme}:" if parts.scheme else "nothing"},
        )
    if not host:
        raise ValidationError("The address needs a host name, e.g. https://hooks.example.com/registry.", code="host")
    if parts.username or parts.password:
        raise ValidationError("Put no user name or password in the address; the signature authenticates "
                              "the registry to the receiver.", code="credentials")
    if is_link_local_host(host):
        raise ValidationError("%(host)s is a link-local address (e.g. a cloud metadata service), not a webhook "
                              "receiver.", code="link_local", params={"host": host})
    if allow_loopback():
        return
    if is_loopback_host(host) or _matches_allowed_host(host):
        raise ValidationError(
            "%(host)s is this server itself (or its loopback address); a webhook must point at another "
            "service.", code="self", params={"host": host},
        )
