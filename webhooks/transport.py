"""One POST to a webhook receiver, dialled to the address that was checked.

The host name is resolved once; every address it resolves to must pass
``webhooks.addresses.refusal`` (one refused answer refuses the attempt: a name that mixes public
and internal answers is either misconfigured or an attack), and the TCP connection goes to one of
those vetted addresses. ``http.client`` never resolves the name again, so DNS rebinding between
the check and the connection cannot redirect the request. The request still carries the URL's
own ``Host`` header, and for https the TLS handshake sends the URL's host name as SNI and verifies
the certificate against it (system trust store; ``SSL_CERT_FILE`` adds an internal CA).

Bounds: each socket operation times out after ``TIMEOUT_S``, and a watchdog cuts the connection
at the caller's deadline, so a receiver that answers one byte at a time cannot hold a worker
(and its lease) longer than that. Redirects are never followed (a 3xx is a failed attempt), no
proxy from the environment is used, and the response body is never read.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import quote, urlsplit

from webhooks.addresses import parse_address, refusal

TIMEOUT_S = 5.0  # one connect, TLS handshake, send or receive
DNS_TIMEOUT_S = 5.0
# Characters left as they are in the request target; anything else (spaces, non-ASCII) is %-encoded.
_TARGET_SAFE = "/?&=%:@!$'()*+,;~[]"

SocketAddress = tuple  # (host, port) or (host, port, flowinfo, scope_id), as getaddrinfo returns it


class Refused(Exception):
    """The receiver's address is not allowed; retrying cannot help."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str  # ASCII (IDNA) name or address literal without brackets
    port: int
    path: str  # request target: path and query, %-encoded


def parse_target(url: str) -> Target:
    """The parts of `url` a request needs; Refused if it is not a usable http(s) URL."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise Refused(f"The webhook URL is not valid: {exc}.") from exc
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise Refused("The webhook URL must be an http:// or https:// URL with a host.")
    host = parts.hostname
    if parse_address(host) is None:
        try:
            host = host.encode("idna").decode("ascii")
        except UnicodeError as exc:
            raise Refused(f"The webhook host name is not valid: {exc}.") from exc
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    return Target(scheme, host, port or (443 if scheme == "https" else 80), quote(path, safe=_TARGET_SAFE))


def _getaddrinfo_within(host: str, port: int, timeout: float) -> list:
    """socket.getaddrinfo, given up after `timeout` seconds (the lookup thread ends on its own)."""
    outcome: dict[str, object] = {}

    def lookup() -> None:
        try:
            outcome["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except OSError as exc:
            outcome["error"] = exc

    thread = threading.Thread(target=lookup, name="webhook-dns", daemon=True)
    thread.start()
    thread.join(max(timeout, 0.0))
    if thread.is_alive():
        raise TimeoutError(f"looking up {host} took longer than {timeout:.0f} s")
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["infos"]  # type: ignore[return-value]


def vetted_addresses(host: str, port: int, *, timeout: float = DNS_TIMEOUT_S) -> list[tuple[int, SocketAddress]]:
    """(family, socket address) pairs to dial for host:port, each one checked; Refused if any is not allowed."""
    literal = parse_address(host)
    if literal is not None:
        reason = refusal(literal)
        if reason:
            raise Refused(f"Not sent: {reason}.")
        family = socket.AF_INET6 if literal.version == 6 else socket.AF_INET
        return [(family, (str(literal), port, 0, 0) if literal.version == 6 else (str(literal), port))]
    infos = _getaddrinfo_within(host, port, timeout)
    vetted: list[tuple[int, SocketAddress]] = []
    for family, _type, _proto, _name, sockaddr in infos:
        if family not in (socket.AF_INET, socket.AF_INET6):
            continue
        address = parse_address(str(sockaddr[0]))
        reason = refusal(address) if address is not None else f"{sockaddr[0]} is not an IP address"
        if reason:
            raise Refused(f"Not sent: {host} resolves to {reason}.")
        if (family, sockaddr) not in vetted:
            vetted.append((family, sockaddr))
    if not vetted:
        raise OSError(f"{host} has no IPv4 or IPv6 address")
    return vetted


@lru_cache(maxsize=1)
def tls_context() -> ssl.SSLContext:
    """Certificate and host name verification against the system trust store (and SSL_CERT_FILE)."""
    return ssl.create_default_context()


class VettedConnection(http.client.HTTPConnection):
    """An HTTP(S) connection to `host` that dials only the given, already checked, addresses."""

    def __init__(self, target: Target, addresses: list[tuple[int, SocketAddress]], *, timeout: float) -> None:
        super().__init__(target.host, target.port, timeout=timeout)
        self.default_port = 443 if target.scheme == "https" else 80  # Host header without a default port
        self._addresses = addresses
        self._tls = target.scheme == "https"
        self._raw: socket.socket | None = None
        self._aborted = False

    def connect(self) -> None:
        error: OSError | None = None
        for family, sockaddr in self._addresses:
            if self._aborted:
                break
            raw = socket.socket(family, socket.SOCK_STREAM)
            self._raw = raw
            raw.settimeout(self.timeout)
            try:
                raw.connect(sockaddr)
                raw.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                # SNI and certificate checks for the URL's name, not for the address dialled.
                self.sock = tls_context().wrap_socket(raw, server_hostname=self.host) if self._tls else raw
                return
            except OSError as exc:
                raw.close()
                error = exc
        raise error or TimeoutError("the attempt's time ran out")

    def abort(self) -> None:
        """Cut the connection from another thread (the deadline passed); blocked reads return at once."""
        self._aborted = True
        for sock in (self.sock, self._raw):
            if sock is not None:
                with contextlib.suppress(OSError):
                    socket.socket.shutdown(sock, socket.SHUT_RDWR)


def post(url: str, body: bytes, headers: dict[str, str], *, deadline: float) -> int:
    """POST `body` to `url` and return the HTTP status; the whole attempt ends by `deadline` (monotonic).

    Raises Refused (the address is not allowed) or OSError / http.client.HTTPException (retry).
    """
    target = parse_target(url)
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no time left for this attempt")
    addresses = vetted_addresses(target.host, target.port, timeout=min(DNS_TIMEOUT_S, remaining))
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise TimeoutError("no time left for this attempt")
    connection = VettedConnection(target, addresses, timeout=min(TIMEOUT_S, remaining))
    watchdog = threading.Timer(remaining, connection.abort)
    watchdog.daemon = True
    watchdog.start()
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()  # status line and headers only; the body is never read
        if connection._aborted:  # the cut may end the headers early: this answer is not one
            raise TimeoutError("the receiver did not answer in time")
        return response.status
    except (OSError, http.client.HTTPException):
        if connection._aborted:
            raise TimeoutError("the receiver did not answer in time") from None
        raise
    finally:
        watchdog.cancel()
        connection.close()
