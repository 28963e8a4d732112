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

A fetch refused because its host name or address already has :data:`FETCHES_PER_HOST` fetches
under way raises :class:`CapacityRefused` at once (waiting for a place would hold one of the
toolkit's ten slots, which the per-host limit exists to spare). That says nothing about the
client's URL, but the toolkit's ``resolve_cimd_application`` backs off every URL whose fetch raised
anything for ``CIMD_FAILURE_BACKOFF_SECONDS`` (60 s): one site dripping its answers locked out every
client on its address until a minute after its fetches ended. So the refusal is noted in a
context-local set, and :func:`capacity_refusals_not_backed_off` (around the toolkit's
``OAuth2Validator._load_application``, where both ``resolve_cimd_application`` and
``refresh_if_stale`` run: ``oauth.validators.RegistryValidator``) lifts the backoff the toolkit
set for those URLs as soon as it returns. The toolkit's own in-flight cap does the same: "this URL
may be perfectly fine, just over capacity".

The toolkit's helpers used here (``_validate_client_id_url``, ``_resolve_and_validate``,
``_effective_max_age``, and for the backoff ``OAuth2Validator._load_application``,
``cimd._backoff_cache_key`` and ``cimd.cache``) are private names; pyproject.toml bounds the
toolkit to the versions tested with, and ``tests/oauth/test_metadata_documents_fetch.py``
exercises them. :func:`toolkit_names_missing` checks at start-up the ones the backoff lifting
relies on; if one is gone the refusal is backed off as before (the old behaviour: a client on a
busy address waits a minute longer), logged once, and ``manage.py check`` warns (``oauth.W001``).
"""

from __future__ import annotations

import contextlib
import functools
import http.client
import json
import logging
import socket
import ssl
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

from oauth2_provider import cimd
from oauth2_provider.settings import oauth2_settings

log = logging.getLogger(__name__)

FETCHES_PER_HOST = 2
_busy: Counter[str] = Counter()
_busy_lock = threading.Lock()


class CapacityRefused(cimd.CIMDError):
    """FETCHES_PER_HOST fetches of the URL's host name or address are already under way: this
    request is refused, but the URL itself has not failed (see the module's docstring)."""


# The client_id URLs refused for capacity inside the innermost capacity_refusals_not_backed_off();
# None outside it (nobody would lift their backoff).
_refused: ContextVar[set[str] | None] = ContextVar("cimd_capacity_refused", default=None)


@contextlib.contextmanager
def _slot(keys: list[str]) -> Iterator[None]:
    """One of FETCHES_PER_HOST places for each key (host name, address), or CapacityRefused at once."""
    with _busy_lock:
        if any(_busy[key] >= FETCHES_PER_HOST for key in keys):
            raise CapacityRefused(f"{FETCHES_PER_HOST} fetches from {keys[0]} are already under way")
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

    def __enter__(self) -> _Watchdog:
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
        try:
            return self._fetch(client_id)
        except CapacityRefused:
            _note_refusal(client_id)
            raise

    def _fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
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


# ------------------------------------------------------------------------------ capacity refusals


def _names(function: Any) -> set[str]:
    """The global and attribute names a function's code reads."""
    return set(getattr(getattr(function, "__code__", None), "co_names", ()))


@functools.lru_cache(maxsize=1)
def toolkit_names_missing() -> tuple[str, ...]:
    """What capacity_refusals_not_backed_off() relies on and the installed toolkit lacks (empty:
    all there). Cached: the answer does not change in a process."""
    from oauth2_provider.oauth2_validators import OAuth2Validator

    missing = []
    load = getattr(OAuth2Validator, "_load_application", None)
    if not callable(load):
        missing.append("oauth2_provider.oauth2_validators.OAuth2Validator._load_application")
    elif not {"resolve_cimd_application", "refresh_if_stale"} <= _names(load):
        missing.append("OAuth2Validator._load_application calling cimd.resolve_cimd_application and "
                       "cimd.refresh_if_stale")
    for name in ("_backoff_cache_key", "resolve_cimd_application"):
        if not callable(getattr(cimd, name, None)):
            missing.append(f"oauth2_provider.cimd.{name}")
    if not hasattr(cimd, "cache"):
        missing.append("oauth2_provider.cimd.cache")
    if not {"_backoff_cache_key", "cache"} <= _names(getattr(cimd, "resolve_cimd_application", None)):
        missing.append("cimd.resolve_cimd_application backing off under cimd._backoff_cache_key "
                       "in cimd.cache")
    return tuple(missing)


_fallback_logged: list[bool] = []


def log_fallback() -> None:
    """Once per process: say that capacity refusals are backed off, and why."""
    if not _fallback_logged:
        _fallback_logged.append(True)
        log.warning("django-oauth-toolkit internals changed (%s missing): a metadata-document fetch refused "
                    "because its host or address is busy backs its client_id URL off for "
                    "CIMD_FAILURE_BACKOFF_SECONDS, like a failed fetch", ", ".join(toolkit_names_missing()))


def _note_refusal(client_id: str) -> None:
    refused = _refused.get()
    if refused is not None:
        refused.add(client_id)
    elif toolkit_names_missing():
        log_fallback()


@contextlib.contextmanager
def capacity_refusals_not_backed_off() -> Iterator[None]:
    """Around the toolkit's ``_load_application``: the URLs whose fetch was refused for capacity
    within it leave no failure backoff behind. The toolkit sets it, then this lifts it as the
    block ends: a concurrent request for the same URL in between is refused as it would have
    been anyway (its host is still busy); a genuine failure of the same URL recorded in between
    is lifted too, which costs one more fetch of that URL, no more than a fresh URL does."""
    if toolkit_names_missing():
        log_fallback()
        yield
        return
    refused: set[str] = set()
    token = _refused.set(refused)
    try:
        yield
    finally:
        _refused.reset(token)
        for client_id in refused:
            cimd.cache.delete(cimd._backoff_cache_key(client_id))


def check_toolkit_names(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """System check: a warning when the backoff of capacity refusals cannot be lifted."""
    from django.core import checks

    missing = toolkit_names_missing()
    if not missing:
        return []
    return [checks.Warning(
        f"django-oauth-toolkit internals changed: {', '.join(missing)} not found; a client-metadata-document "
        "fetch refused because its host or address is busy will back its client_id URL off for "
        "CIMD_FAILURE_BACKOFF_SECONDS (every client on a busy address is locked out that much longer).",
        hint="Install the django-oauth-toolkit version pyproject.toml names, or check "
             "oauth/metadata_documents.py and oauth/validators.py against the new one and widen the bound.",
        obj="oauth.metadata_documents", id="oauth.W001")]
