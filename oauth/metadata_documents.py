"""Fetching a Client ID Metadata Document within a deadline for the whole fetch, a few at a time
per host.

django-oauth-toolkit's fetcher (``oauth2_provider.cimd.SafeMetadataFetcher``) already refuses
non-https URLs, non-public addresses and redirects, and caps the body's size. Its time limit,
though, is a socket timeout: it bounds each read, not the fetch, so a host that drips its answer a
byte every two seconds held a fetch slot for minutes, and ten such requests took all ten slots
(``CIMD_MAX_CONCURRENT_FETCHES``): every other client's sign-in was refused meanwhile.

:class:`BoundedMetadataFetcher` (``OAUTH2_PROVIDER["CIMD_METADATA_FETCHER"]``) keeps the
toolkit's URL and address checks and makes the request itself with the standard library, so a
watchdog can shut the socket when ``CIMD_FETCH_TIMEOUT_SECONDS`` have passed since the fetch
began, whatever stage it is in (connect, TLS handshake, headers, body). At most
:data:`FETCHES_PER_HOST` fetches run at once for one host name, and for one address (many host
names of one attacker usually point at one server), so a slow host holds at most that many of
the slots. The document must also be valid by this server's own registration rules: at most
:data:`~oauth.views.MAX_REDIRECT_URIS` redirect URIs, each exactly one URI.

The toolkit's helpers used here (``_validate_client_id_url``, ``_resolve_and_validate``,
``_effective_max_age``) are private names; pyproject.toml bounds the toolkit below 4, and
``tests/oauth/test_metadata_documents_fetch.py`` exercises them.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import ssl
import threading
import time
from collections import Counter
from typing import Any, Iterator

from oauth2_provider import cimd
from oauth2_provider.settings import oauth2_settings

FETCHES_PER_HOST = 2
_busy: Counter[str] = Counter()
_busy_lock = threading.Lock()


@contextlib.contextmanager
def _slot(keys: list[str]) -> Iterator[None]:
    """One of FETCHES_PER_HOST places for each key (host name, address), or CIMDError at once."""
    with _busy_lock:
        if any(_busy[key] >= FETCHES_PER_HOST for key in keys):
            raise cimd.CIMDError(f"{FETCHES_PER_HOST} fetches from {keys[0]} are already under way")
        for key in keys:
            _busy[key] += 1
    try:
        yield
    finally:
        with _busy_lock:
            for key in keys:
                _busy[key] -= 1
                if _busy[key] <= 0:
                    del _busy[key]


class _Watchdog:
    """Shuts the socket it watches when the deadline passes, which ends any read or write blocked
    on it in the fetching thread."""

    def __init__(self, seconds: float) -> None:
        self.sock: socket.socket | None = None
        self.fired = False
        self._timer = threading.Timer(max(seconds, 0.0), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> "_Watchdog":
        self._timer.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._timer.cancel()

    def _fire(self) -> None:
        self.fired = True
        sock = self.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


class BoundedMetadataFetcher:
    """``fetch(client_id) -> (metadata, max_age_seconds)`` or :class:`oauth2_provider.cimd.CIMDError`."""

    def addresses(self, hostname: str, port: int) -> list[str]:
        """The host's addresses, every one of them public (else CIMDError)."""
        return cimd._resolve_and_validate(hostname, port)

    def tls_context(self) -> ssl.SSLContext:
        return ssl.create_default_context()

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        started = time.monotonic()
        parsed = cimd._validate_client_id_url(client_id)
        port = parsed.port or 443
        hostname = parsed.hostname.lower()
        timeout = float(oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS)
        with _slot([f"host:{hostname}"]):
            ips = self.addresses(hostname, port)
            with _slot([f"address:{ips[0]}"]):
                last: Exception | None = None
                for ip in ips:
                    remaining = timeout - (time.monotonic() - started)
                    if remaining <= 0:
                        break
                    try:
                        return self._fetch_from(ip, port, parsed, remaining)
                    except cimd.CIMDError:
                        raise
                    except (OSError, http.client.HTTPException, ValueError) as exc:
                        last = exc
                if time.monotonic() - started >= timeout:
                    raise cimd.CIMDError(f"client_id document took longer than {timeout:g} s to fetch")
                raise cimd.CIMDError(f"could not fetch client_id document: {last!r}")

    def _fetch_from(self, ip: str, port: int, parsed: Any, remaining: float) -> tuple[dict[str, Any], int]:
        path = (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else "")
        request = (f"GET {path} HTTP/1.1\r\nHost: {parsed.netloc}\r\n"
                   "Accept: application/json, application/*+json\r\nConnection: close\r\n"
                   "User-Agent: mcp-prompt-registry\r\n\r\n").encode("ascii")
        with _Watchdog(remaining) as watchdog:
            raw = socket.create_connection((ip, port), timeout=remaining)
            try:
                tls = self.tls_context().wrap_socket(raw, server_hostname=parsed.hostname,
                                                     do_handshake_on_connect=False)
                watchdog.sock = tls
                if watchdog.fired:
                    raise cimd.CIMDError("client_id document fetch ran out of time")
                tls.do_handshake()
                tls.sendall(request)
                response = http.client.HTTPResponse(tls, method="GET")
                response.begin()
                document = self._read(response)
            except (OSError, http.client.HTTPException, ValueError):
                if watchdog.fired:
                    raise cimd.CIMDError("client_id document took too long to arrive") from None
                raise
            finally:
                watchdog.sock = None
                raw.close()
                with contextlib.suppress(NameError, OSError):
                    tls.close()
            if watchdog.fired:
                raise cimd.CIMDError("client_id document took too long to arrive")
        return document

    def _read(self, response: http.client.HTTPResponse) -> tuple[dict[str, Any], int]:
        from .views import redirect_uris_problem

        if response.status != 200:
            raise cimd.CIMDError(f"client_id document returned HTTP {response.status}")
        media_type = (response.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if media_type != "application/json" and not (media_type.startswith("application/")
                                                     and media_type.endswith("+json")):
            raise cimd.CIMDError(f"client_id document is not JSON (Content-Type: {media_type!r})")
        max_size = int(oauth2_settings.CIMD_MAX_DOCUMENT_SIZE)
        body = response.read(max_size + 1)
        if len(body) > max_size:
            raise cimd.CIMDError("client_id document exceeds the maximum allowed size")
        try:
            data = json.loads(body)
        except (ValueError, RecursionError) as exc:
            raise cimd.CIMDError("client_id document is not valid JSON") from exc
        if not isinstance(data, dict):
            raise cimd.CIMDError("client_id document must be a JSON object")
        problem = redirect_uris_problem(data.get("redirect_uris"))
        if problem:
            raise cimd.CIMDError(f"client_id document: {problem}")
        return data, cimd._effective_max_age(response.getheader("Cache-Control"))
