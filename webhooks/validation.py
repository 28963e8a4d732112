"""Webhook URL checks in the admin form: http(s) only, no credentials, never this server, and no
address that is not global unless settings.WEBHOOKS_ALLOWED_NETWORKS allows it.

Host names are not resolved here (DNS answers change); every attempt resolves the name once and
checks each address before it dials one of them (``webhooks.transport``).
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError

from webhooks.addresses import IPAddress, allowed_networks, parse_address, refusal

LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}
_LOOPBACK = (ipaddress.IPv4Address("127.0.0.1"), ipaddress.IPv6Address("::1"))


def is_loopback_name(host: str) -> bool:
    host = host.rstrip(".").lower()
    return host in LOOPBACK_NAMES or host.endswith(".localhost")


def _address_error(host: str, address: IPAddress) -> ValidationError | None:
    """The form error for an address literal that is not allowed (None if it is allowed)."""
    reason = refusal(address, allowed_networks())
    if not reason:
        return None
    inner = address.ipv4_mapped if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped else address
    if inner.is_loopback or inner.is_unspecified:
        return ValidationError(
            "%(host)s is this server itself (or its loopback address); a webhook must point at another "
            "service.", code="self", params={"host": host})
    if inner.is_link_local:
        return ValidationError("%(host)s is a link-local address (e.g. a cloud metadata service), not a webhook "
                               "receiver.", code="link_local", params={"host": host})
    return ValidationError(
        "%(host)s is not a public address (%(reason)s). Receivers on internal networks must be listed in "
        "WEBHOOKS_ALLOWED_NETWORKS by the operator.", code="private", params={"host": host, "reason": reason})


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
    """Raise ValidationError (codes: invalid, scheme, host, credentials, self, link_local, private)
    unless `url` may receive webhooks."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in range
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
    address = parse_address(host)
    if address is not None:
        error = _address_error(host, address)
        if error is not None:
            raise error
        if refusal(address, []):  # not global, but explicitly allowed by the operator
            return
    elif is_loopback_name(host):
        if all(refusal(loopback) for loopback in _LOOPBACK):
            raise ValidationError(
                "%(host)s is this server itself (or its loopback address); a webhook must point at another "
                "service.", code="self", params={"host": host})
        return
    if _matches_allowed_host(host):
        raise ValidationError(
            "%(host)s is this server itself; a webhook must point at another service.",
            code="self", params={"host": host},
        )
