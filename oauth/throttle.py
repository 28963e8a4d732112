"""Per-address limits on the OAuth endpoints anyone can call without signing in.

Registering a client, and any token or revocation request that carries a client secret, costs
one hash of a secret with Django's password hasher (a million PBKDF2 iterations: 1.9 s of CPU
against 31 ms for a GET in review), so a loop of anonymous POSTs could keep every worker busy.
Admin logins are throttled by django-axes in the database; these endpoints need only counters:

* ``/register`` (and RFC 7592 updates): ``OAUTH_REGISTRATIONS_PER_HOUR`` per address;
* ``/oauth/token/`` and ``/oauth/revoke_token/``: ``OAUTH_TOKEN_REQUESTS_PER_MINUTE`` per
  address, and after ``OAUTH_CLIENT_AUTH_FAILURES`` failed client authentications (a wrong
  secret) within ten minutes, requests from that address that carry a secret are refused for the
  rest of the ten minutes without hashing anything.

Refusals are HTTP 429 with ``Retry-After`` and an RFC 6749-style JSON error. The counters live
in the Django cache named ``throttle`` (config/settings.py): Redis when ``REDIS_URL`` is set, so
every worker counts together; otherwise per process. A cache outage lets requests through
(logged), it never refuses them. Addresses are counted like anonymous MCP sessions: the IPv4
address or the IPv6 /64 (behind a proxy, run the server with ``--proxy-headers``).
"""

from __future__ import annotations

import ipaddress
import logging
import time
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest, JsonResponse

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Throttle:
    """At most ``limit`` hits per address in each fixed window of ``window`` seconds."""

    name: str
    setting: str
    default: int
    window: int

    @property
    def limit(self) -> int:
        return int(getattr(settings, self.setting, self.default))

    def _key(self, address: str) -> str:
        return f"oauth-throttle:{self.name}:{address}:{int(time.time() // self.window)}"

    def count(self, address: str) -> int:
        try:
            return int(caches["throttle"].get(self._key(address)) or 0)
        except Exception:  # the cache is down: let requests through
            log.warning("OAuth throttle %s: the cache is unreachable; not counting", self.name, exc_info=True)
            return 0

    def hit(self, address: str) -> int:
        """Count one hit; returns the count in this window (0 when the cache is unreachable)."""
        key = self._key(address)
        try:
            cache = caches["throttle"]
            if cache.add(key, 1, self.window + 1):
                return 1
            return int(cache.incr(key))
        except ValueError:  # expired between add and incr
            return 1
        except Exception:
            log.warning("OAuth throttle %s: the cache is unreachable; not counting", self.name, exc_info=True)
            return 0

    def retry_after(self) -> int:
        return self.window - int(time.time()) % self.window


REGISTRATIONS = Throttle("register", "OAUTH_REGISTRATIONS_PER_HOUR", 20, 3600)
TOKEN_REQUESTS = Throttle("token", "OAUTH_TOKEN_REQUESTS_PER_MINUTE", 120, 60)
CLIENT_AUTH_FAILURES = Throttle("client-auth-failure", "OAUTH_CLIENT_AUTH_FAILURES", 10, 600)


def address_of(request: HttpRequest) -> str:
    """The IPv4 address, or the IPv6 /64: one host is usually handed a whole /64."""
    host = request.META.get("REMOTE_ADDR") or ""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64] or "unknown"
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def too_many(throttle: Throttle) -> JsonResponse:
    response = JsonResponse({"error": "temporarily_unavailable",
                             "error_description": f"Too many requests from this address; try again in "
                                                  f"{throttle.retry_after()} seconds."}, status=429)
    response["Retry-After"] = str(throttle.retry_after())
    return response


def over(throttle: Throttle, address: str) -> bool:
    """Count this request; whether it goes past the limit."""
    return throttle.hit(address) > throttle.limit


def carries_client_secret(request: HttpRequest) -> bool:
    """HTTP Basic client authentication or a client_secret form field: the request will be hashed."""
    return request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("basic ") \
        or bool(request.POST.get("client_secret"))
