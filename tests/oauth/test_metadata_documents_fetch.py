"""The metadata-document fetch against a real TLS server on loopback: the whole fetch (connect,
handshake, headers, body) ends at the deadline however slowly the host drips, one host takes at
most a few fetch slots, and a document is held to this server's registration rules."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from oauth2_provider import cimd

from oauth.metadata_documents import FETCHES_PER_HOST, BoundedMetadataFetcher

HOST = "assistant.test"
ADDRESSES = {HOST: "127.0.0.1", "other.test": "127.0.0.2"}
DEADLINE = 1.0


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}",
                    "-addext", f"subjectAltName=DNS:{HOST},DNS:other.test", "-keyout", str(key), "-out", str(cert)],
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


@pytest.fixture
def fetcher(certificate, settings):
    settings.OAUTH2_PROVIDER = {**django_settings.OAUTH2_PROVIDER, "CIMD_FETCH_TIMEOUT_SECONDS": DEADLINE}
    hosts: list[Host] = []

    class Loopback(BoundedMetadataFetcher):
        """Resolves the test host names to loopback (the real one refuses them) and trusts the
        test certificate."""

        def addresses(self, hostname, port):
            return [ADDRESSES[hostname]]

        def tls_context(self):
            context = ssl.create_default_context(cafile=str(certificate[0]))
            return context

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
