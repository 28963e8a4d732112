"""Which IP addresses a webhook may be sent to: global unicast ones, plus what the operator allows.

A webhook URL is chosen by an administrator but resolved by DNS that an attacker may control, so
every address is judged here, at send time, after the one resolution whose result is dialled
(see ``webhooks.transport``). ``ipaddress``'s ``is_global`` alone is not enough on Python 3.11:
it calls multicast, IPv6 site-local, IPv4-compatible IPv6 and NAT64/6to4 addresses that embed a
private IPv4 address "global", so those are refused explicitly.

``settings.WEBHOOKS_ALLOWED_NETWORKS`` (e.g. ``"127.0.0.0/8,::1/128"`` from the environment, or a
list) names networks that are accepted although they are not global: receivers on a private
network, or a loopback receiver in development and tests.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_NAT64 = (ipaddress.IPv6Network("64:ff9b::/96"), ipaddress.IPv6Network("64:ff9b:1::/48"))
_IPV4_COMPATIBLE = ipaddress.IPv6Network("::/96")  # deprecated ::a.b.c.d form
_SHARED = ipaddress.IPv4Network("100.64.0.0/10")  # carrier-grade NAT; not global, not "private" on 3.11
_IETF_PROTOCOL = ipaddress.IPv4Network("192.0.0.0/24")  # only two anycast addresses in it are global


def allowed_networks() -> list[IPNetwork]:
    """The networks of settings.WEBHOOKS_ALLOWED_NETWORKS (comma-separated text or a list)."""
    raw = getattr(settings, "WEBHOOKS_ALLOWED_NETWORKS", ()) or ()
    items: Iterable[str] = raw.split(",") if isinstance(raw, str) else raw
    networks: list[IPNetwork] = []
    for item in items:
        text = str(item).strip()
        if not text:
            continue
        try:
            networks.append(ipaddress.ip_network(text, strict=False))
        except ValueError as exc:
            raise ImproperlyConfigured(
                f"WEBHOOKS_ALLOWED_NETWORKS: {text!r} is not a network (write e.g. 10.0.0.0/8 or ::1/128): {exc}"
            ) from exc
    return networks


def parse_address(text: str) -> IPAddress | None:
    """The address in `text` (brackets and an IPv6 zone id tolerated), or None if it is a name."""
    try:
        return ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None


def _translated_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address that dialling `address` actually reaches (mapped, IPv4-compatible, NAT64)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if (address in _IPV4_COMPATIBLE and int(address) > 1) or any(address in net for net in _NAT64):
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _tunnelled_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 end point a 6to4 or Teredo address tunnels to."""
    if address.sixtofour is not None:
        return address.sixtofour
    if address.teredo is not None:
        return address.teredo[1]
    return None


def non_global_reason(address: IPAddress) -> str:
    """Why `address` is not a public unicast address ('' if it is one)."""
    if isinstance(address, ipaddress.IPv6Address):
        translated = _translated_ipv4(address)
        if translated is not None:  # judged as the IPv4 address it is
            inner = non_global_reason(translated)
            return f"an IPv6 form of {translated}, {inner}" if inner else ""
        tunnelled = _tunnelled_ipv4(address)
        inner = non_global_reason(tunnelled) if tunnelled is not None else ""
        if inner:
            return f"a tunnel address towards {tunnelled}, {inner}"
    if address.is_loopback:
        return "a loopback address (this server)"
    if address.is_unspecified:
        return "the unspecified address (this server)"
    if address.is_link_local:
        return "a link-local address (e.g. a cloud metadata service)"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv6Address) and address.is_site_local:
        return "a site-local address"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED:
        return "a carrier-grade NAT address (100.64.0.0/10)"
    if isinstance(address, ipaddress.IPv4Address) and address in _IETF_PROTOCOL:
        return "an IETF protocol address (192.0.0.0/24)"
    if address.is_private:
        return "a private or reserved address"
    if address.is_reserved or not address.is_global:
        return "a reserved address"
    return ""


def refusal(address: IPAddress, networks: list[IPNetwork] | None = None) -> str:
    """Why a webhook must not be sent to `address` ('' if it may be): not global and not allowed."""
    reason = non_global_reason(address)
    if not reason:
        return ""
    networks = allowed_networks() if networks is None else networks
    candidates = [address]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        candidates.append(address.ipv4_mapped)  # ::ffff:127.0.0.1 is allowed where 127.0.0.0/8 is
    if any(candidate in net for candidate in candidates for net in networks if candidate.version == net.version):
        return ""
    return f"{address} is {reason}; not in WEBHOOKS_ALLOWED_NETWORKS"
