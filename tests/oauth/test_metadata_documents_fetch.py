"""The metadata-document fetch against a real TLS server on loopback: the whole fetch (connect,
handshake, headers, body) ends at the deadline however slowly the host drips, one host takes at
most a few fetch slots (a refusal for that is not a failure: the client is let in once the slots
free up, not backed off), and a document is held to this server's registration rules."""

from __future__ import annotations

import contextlib
import json
import socket
import ssl
import subprocess
import threading
import time
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from django.core import checks
from django.core.cache import cache
from django.utils import timezone
from oauth2_provider import cimd
from oauth2_provider.models import Application
from oauth2_provider.oauth2_validators import OAuth2Validator

from oauth import metadata_documents
from oauth.metadata_documents import FETCHES_PER_HOST, BoundedMetadataFetcher
from tests.oauth.conftest import authorize_params, pkce

HOST = "assistant.test"
DRIP = "drip.test"  # another site on the assistant's address (shared hosting, a CDN)
ADDRESSES = {HOST: "127.0.0.1", "other.test": "127.0.0.2", DRIP: "127.0.0.1"}
DEADLINE = 1.0


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}",
                    "-addext", f"subjectAltName=DNS:{HOST},DNS:other.test,DNS:{DRIP}",
                    "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    return cert, key


class Host:
    """A TLS server on loopback whose answer is chosen per test: ``behaviour(conn)``."""

    def __init__(self, certificate: tuple[Path, Path], behaviour, address: str = "127.0.0.1") -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(*map(str, certificate))
        self.behaviour = behaviour
        self.listener = socket.create_server((address, 0))
        self.port = self.listener.getsockname()[1]
        self.connections = 0
        self.stopped = False
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            self.behaviour(self, conn)
        except (OSError, ssl.SSLError):
            pass
        finally:
            conn.close()

    def stop(self) -> None:
        self.stopped = True
        self.listener.close()


def document(client_id: str, **overrides) -> bytes:
    return json.dumps({"client_id": client_id, "client_name": "Hosted assistant",
                       "redirect_uris": ["https://assistant.test/callback"], "token_endpoint_auth_method": "none",
                       **overrides}).encode()


def answer(body: bytes, *, drip: float = 0.0, headers_drip: float = 0.0):
    def behaviour(host: Host, conn: socket.socket) -> None:
        tls = host.context.wrap_socket(conn, server_side=True)
        request = b""
        while b"\r\n\r\n" not in request:
            request += tls.recv(4096)
        head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)
        for part in ([head[i:i + 1] for i in range(len(head))] if headers_drip else [head]):
            tls.sendall(part)
            time.sleep(headers_drip)
        for index in range(len(body)):
            tls.sendall(body[index:index + 1] if drip else body[index:])
            if not drip:
                break
            time.sleep(drip)
    return behaviour


def silent(host: Host, conn: socket.socket) -> None:
    time.sleep(30)  # accepts the connection, never starts TLS


class Loopback(BoundedMetadataFetcher):
    """Resolves the test host names to loopback (the real one refuses them) and trusts the test
    certificate. Module-level, so that CIMD_METADATA_FETCHER can name it."""

    cafile = ""

    def addresses(self, hostname, port):
        return [ADDRESSES[hostname]]

    def tls_context(self):
        return ssl.create_default_context(cafile=self.cafile)


@pytest.fixture
def fetcher(certificate, settings, monkeypatch):
    settings.OAUTH2_PROVIDER = {**django_settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": DEADLINE,
                                "CIMD_METADATA_FETCHER": f"{__name__}.Loopback"}
    monkeypatch.setattr(Loopback, "cafile", str(certificate[0]))
    hosts: list[Host] = []

    def start(behaviour, name: str = HOST) -> Host:
        host = Host(certificate, behaviour, ADDRESSES[name])
        hosts.append(host)
        return host

    yield Loopback(), start
    for host in hosts:
        host.stop()


def url(host: Host, name: str = HOST) -> str:
    return f"https://{name}:{host.port}/client.json"


def test_a_document_is_fetched_and_read(fetcher):
    fetch, start = fetcher
    host = start(None)
    host.behaviour = answer(document(url(host)))
    metadata, max_age = fetch.fetch(url(host))
    assert metadata["client_name"] == "Hosted assistant" and max_age > 0


@pytest.mark.parametrize("behaviour", [answer(b'{"client_id": "x"}' + b" " * 200, drip=0.2),
                                       answer(b"{}", headers_drip=0.2), silent],
                         ids=["body dripped", "headers dripped", "TLS never starts"])
def test_the_whole_fetch_ends_at_the_deadline_however_slowly_the_host_answers(fetcher, behaviour):
    """Each byte within the old per-read timeout: the toolkit's fetcher waited for all of them."""
    fetch, start = fetcher
    host = start(behaviour)
    started = time.monotonic()
    with pytest.raises(cimd.CIMDError):
        fetch.fetch(url(host))
    assert time.monotonic() - started < DEADLINE + 2  # the drip alone would take 40 s or more


def test_one_host_holds_at_most_a_few_fetch_slots(fetcher):
    fetch, start = fetcher
    slow = start(answer(b"{}" + b" " * 100, drip=0.2))
    quick = start(None, "other.test")
    quick.behaviour = answer(document(url(quick, "other.test")))
    errors: list[Exception] = []

    def hold():
        try:
            fetch.fetch(url(slow))
        except cimd.CIMDError as exc:
            errors.append(exc)

    holders = [threading.Thread(target=hold) for _ in range(FETCHES_PER_HOST)]
    for thread in holders:
        thread.start()
    deadline = time.monotonic() + 2
    while slow.connections < FETCHES_PER_HOST and time.monotonic() < deadline:
        time.sleep(0.02)
    with pytest.raises(cimd.CIMDError, match="already under way"):
        fetch.fetch(url(slow))
    assert slow.connections == FETCHES_PER_HOST  # the refused one never connected
    assert fetch.fetch(url(quick, "other.test"))[0]["client_name"] == "Hosted assistant"  # others go on
    for thread in holders:
        thread.join(5)


class SlowNeighbour:
    """FETCHES_PER_HOST fetches of fresh URLs on a host (DRIP) that shares the assistant's
    address and drips its answer until the test releases it: what an attacker keeps up to lock
    out every client hosted on that address."""

    def __init__(self, fetch: BoundedMetadataFetcher, start) -> None:
        self.released = threading.Event()
        self.host = start(self._drip, DRIP)
        self.threads = [threading.Thread(target=self._hold, args=(f"{url(self.host, DRIP)}?{n}",),
                                         daemon=True) for n in range(FETCHES_PER_HOST)]
        self.fetch = fetch

    def _drip(self, host: Host, conn: socket.socket) -> None:
        tls = host.context.wrap_socket(conn, server_side=True)
        request = b""
        while b"\r\n\r\n" not in request:
            request += tls.recv(4096)
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n{")
        while not self.released.wait(0.2):
            tls.sendall(b" ")

    def _hold(self, client_id: str) -> None:
        with contextlib.suppress(cimd.CIMDError):  # the host hangs up mid-document
            self.fetch.fetch(client_id)

    def __enter__(self) -> SlowNeighbour:
        for thread in self.threads:
            thread.start()
        deadline = time.monotonic() + 5
        while self.host.connections < FETCHES_PER_HOST and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.host.connections == FETCHES_PER_HOST
        return self

    def __exit__(self, *exc) -> None:
        """The slow fetches end (the host hangs up), and are over when this returns."""
        self.released.set()
        for thread in self.threads:
            thread.join(5)
        assert not any(thread.is_alive() for thread in self.threads)


@pytest.fixture
def neighbour(fetcher, settings):
    """The fetcher, with a deadline the slow fetches cannot reach before the test ends them."""
    settings.OAUTH2_PROVIDER = {**settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": 30}
    fetch, start = fetcher
    return lambda: SlowNeighbour(fetch, start), start


def sign_in(web, client_id: str):
    """The authorize step of a metadata-document client: it resolves (fetches) the client."""
    _verifier, challenge = pkce()
    params = authorize_params(client_id, challenge, redirect_uri="https://assistant.test/callback")
    return web.get("/oauth/authorize/?" + urlencode(params))


@pytest.mark.django_db
def test_a_client_refused_for_a_busy_address_signs_in_once_the_slow_fetches_end(neighbour, web, editor):
    """A refusal because its address is busy is not a failure of the client's URL: the toolkit
    backed off every failed URL for CIMD_FAILURE_BACKOFF_SECONDS (60 s), so one dripping site
    locked out every client on its address for a minute after its fetches ended."""
    slow_neighbour, start = neighbour
    assistant = start(None)
    client_id = url(assistant)
    assistant.behaviour = answer(document(client_id))
    web.force_login(editor)
    with slow_neighbour():
        refused = sign_in(web, client_id)
        assert refused.status_code != 200 and assistant.connections == 0  # refused at once, no fetch
        assert not Application.objects.filter(client_id=client_id).exists()
    ended = time.monotonic()
    page = sign_in(web, client_id)
    assert page.status_code == 200, page.content[:300]
    assert "Hosted assistant" in page.content.decode() and assistant.connections == 1
    assert time.monotonic() - ended < 5  # well within the 60 s backoff
    assert cache.get(cimd._backoff_cache_key(client_id)) is None


@pytest.mark.django_db
def test_a_stale_client_refused_a_refresh_for_a_busy_address_is_refreshed_once_the_slow_fetches_end(
        neighbour, web, editor):
    """The same for a known client whose document is due for a refresh: the refused refresh
    keeps the old document (the toolkit does), and the next sign-in refreshes it, not a minute
    later."""
    slow_neighbour, start = neighbour
    assistant = start(None)
    client_id = url(assistant)
    assistant.behaviour = answer(document(client_id))
    Application.objects.create(client_id=client_id, name="Old name", client_type="public", user=None,
                               authorization_grant_type="authorization-code", registration_source="cimd",
                               redirect_uris="https://assistant.test/callback",
                               cimd_expires_at=timezone.now() - timedelta(seconds=1))
    web.force_login(editor)
    with slow_neighbour():
        page = sign_in(web, client_id)
        assert page.status_code == 200 and "Old name" in page.content.decode() and assistant.connections == 0
    page = sign_in(web, client_id)
    assert page.status_code == 200 and "Hosted assistant" in page.content.decode(), page.content[:300]
    assert assistant.connections == 1
    assert Application.objects.get(client_id=client_id).name == "Hosted assistant"


def test_a_document_with_a_smuggled_redirect_uri_is_refused(fetcher):
    fetch, start = fetcher
    host = start(None)
    host.behaviour = answer(document(url(host), redirect_uris=["https://assistant.test/cb\nhttp://evil.test/cb"]))
    with pytest.raises(cimd.CIMDError, match="exactly one URI"):
        fetch.fetch(url(host))


def test_a_deeply_nested_document_is_refused_not_a_crash(fetcher):
    fetch, start = fetcher
    host = start(None)
    host.behaviour = answer(b"[" * 5000 + b"]" * 5000)
    with pytest.raises(cimd.CIMDError):
        fetch.fetch(url(host))


def test_the_setting_uses_the_bounded_fetcher():
    assert django_settings.OAUTH2_PROVIDER["CIMD_METADATA_FETCHER"] == "oauth.metadata_documents.BoundedMetadataFetcher"


@pytest.fixture
def changed_toolkit():
    """Patches of the toolkit that are undone, and the guard's cached diagnosis forgotten, after
    the test."""
    with pytest.MonkeyPatch.context() as patch:
        metadata_documents.toolkit_names_missing.cache_clear()
        patch.setattr(metadata_documents, "_fallback_logged", [])
        yield patch
    metadata_documents.toolkit_names_missing.cache_clear()


def compatibility_warnings() -> list[str]:
    return [message.id for message in checks.run_checks(tags=[checks.Tags.compatibility])]


def test_the_installed_toolkit_has_every_name_the_backoff_lifting_needs(changed_toolkit):
    assert metadata_documents.toolkit_names_missing() == ()
    assert "oauth.W001" not in compatibility_warnings()


@pytest.mark.parametrize("owner, name", [(OAuth2Validator, "_load_application"), (cimd, "_backoff_cache_key"),
                                         (cimd, "cache")])
def test_manage_py_check_warns_when_a_toolkit_name_is_gone(changed_toolkit, owner, name):
    changed_toolkit.delattr(owner, name)
    assert "oauth.W001" in compatibility_warnings()
    assert any(name in missing for missing in metadata_documents.toolkit_names_missing())


@pytest.mark.django_db
def test_a_toolkit_that_backs_off_elsewhere_falls_back_to_backing_off_refusals_and_says_so_once(
        changed_toolkit, neighbour, web, editor, caplog):
    """A toolkit whose resolver no longer backs off under cimd._backoff_cache_key: lifting that
    key would do nothing, so the guard leaves the toolkit alone. The refusal is backed off as
    before (the client waits out the backoff), not a crash, and the log says why, once."""
    resolve = cimd.resolve_cimd_application

    def resolve_elsewhere(client_id, request):
        return resolve(client_id, request)

    changed_toolkit.setattr(cimd, "resolve_cimd_application", resolve_elsewhere)
    assert "oauth.W001" in compatibility_warnings()
    slow_neighbour, start = neighbour
    assistant = start(None)
    client_id = url(assistant)
    assistant.behaviour = answer(document(client_id))
    web.force_login(editor)
    with slow_neighbour():
        assert sign_in(web, client_id).status_code == 400
        assert sign_in(web, client_id).status_code == 400
    assert sign_in(web, client_id).status_code == 400 and assistant.connections == 0  # backed off
    fallbacks = [record for record in caplog.records
                 if record.name == "oauth.metadata_documents" and "internals changed" in record.getMessage()]
    assert len(fallbacks) == 1 and "resolve_cimd_application" in fallbacks[0].getMessage()
