"""The POST goes to the address that was checked: one resolution, Host/SNI/certificate for the URL's
name, every answer vetted, and no attempt outlives its deadline."""

from __future__ import annotations

import shutil
import socket
import ssl
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from registry.release import services
from tests.factories import make_prompt
from tests.webhooks.conftest import Receiver
from webhooks import delivery, transport
from webhooks.models import DeliveryStatus, Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db

PUBLIC = "93.184.215.14"


class FakeDNS:
    """socket.getaddrinfo answering from a script: answers[i] for the i-th lookup (the last repeats)."""

    def __init__(self, *answers: list[str]) -> None:
        self.answers = answers
        self.lookups: list[str] = []

    def __call__(self, host, port, family=0, type=0, proto=0, flags=0):
        self.lookups.append(host)
        addresses = self.answers[min(len(self.lookups), len(self.answers)) - 1]
        return [(socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "",
                 (a, port, 0, 0) if ":" in a else (a, port)) for a in addresses]


@pytest.fixture
def dialled(monkeypatch):
    """Every address a socket connects to; the public test address refuses (nothing leaves the machine)."""
    seen: list[str] = []
    real_connect = socket.socket.connect

    def connect(sock, address):
        seen.append(address[0])
        if address[0] == PUBLIC:
            raise ConnectionRefusedError(111, "Connection refused (test double for a public host)")
        return real_connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    return seen


def queue(url: str, publisher) -> None:
    Webhook.objects.create(name="ci", url=url, events=["version.published"])
    services.publish(make_prompt("greet"), acting_user=publisher, note="first", labels=["staging"])


def test_dns_rebinding_after_the_check_cannot_reach_a_private_address(monkeypatch, dialled, publisher, settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    internal = Receiver()  # what the second answer points at: this server's loopback
    try:
        dns = FakeDNS([PUBLIC], ["127.0.0.1"])
        monkeypatch.setattr(socket, "getaddrinfo", dns)
        queue(f"http://rebind.example:{internal.port}/hook", publisher)
        [attempt] = delivery.deliver_due()
        assert internal.requests == []
        assert dialled == [PUBLIC]  # the checked address, and only it
        assert dns.lookups == ["rebind.example"]  # resolved once
        assert attempt.status == DeliveryStatus.PENDING and "ConnectionRefusedError" in attempt.last_error
    finally:
        internal.close()


def test_a_name_with_any_internal_answer_is_refused_without_dialling(monkeypatch, dialled, publisher, settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    monkeypatch.setattr(socket, "getaddrinfo", FakeDNS([PUBLIC, "10.0.0.7"]))
    queue("https://mixed.example/hook", publisher)
    [attempt] = delivery.deliver_due()
    assert dialled == []
    assert attempt.status == DeliveryStatus.FAILED and "10.0.0.7" in attempt.last_error


def test_the_vetted_address_is_dialled_with_the_urls_host_header(monkeypatch, receiver, publisher):
    monkeypatch.setattr(socket, "getaddrinfo", FakeDNS(["127.0.0.1"]))
    queue(f"http://hooks.example:{receiver.port}/hook?team=a b", publisher)
    [attempt] = delivery.deliver_due()
    assert attempt.status == DeliveryStatus.DELIVERED
    [(headers, _)] = receiver.requests
    assert headers["Host"] == f"hooks.example:{receiver.port}"


def test_the_allow_list_lets_a_loopback_receiver_through_and_its_absence_refuses_it(receiver, publisher, settings):
    queue(receiver.url, publisher)
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    [refused] = delivery.deliver_due()
    assert refused.status == DeliveryStatus.FAILED and receiver.requests == []
    WebhookDelivery.objects.update(status=DeliveryStatus.PENDING, next_attempt_at=refused.last_attempt_at)
    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8"
    [sent] = delivery.deliver_due()
    assert sent.status == DeliveryStatus.DELIVERED and len(receiver.requests) == 1


# ----------------------------------------------------------------------------------------------- TLS
def _openssl(*args: str, cwd) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory):
    """A test CA and a server certificate for hooks.example, made with the openssl command."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed: the TLS tests need it to make a test certificate")
    folder = tmp_path_factory.mktemp("tls")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=Test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
             cwd=folder)
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=hooks.example", cwd=folder)
    (folder / "ext.cnf").write_text("subjectAltName=DNS:hooks.example\nextendedKeyUsage=serverAuth\n")
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
             "-out", "server.pem", "-days", "2", "-extfile", "ext.cnf", cwd=folder)
    return folder


@pytest.fixture
def tls_receiver(certificates, monkeypatch, loopback_allowed):
    """An https receiver on 127.0.0.1 that records the SNI name of each handshake."""
    server_names: list[str | None] = []
    requests: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            requests.append(dict(self.headers))
            self.send_response(204)
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    context.sni_callback = lambda sock, name, ctx: server_names.append(name)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    server.handle_error = lambda request, address: None  # refused handshakes are expected here
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = ssl.create_default_context(cafile=str(certificates / "ca.pem"))
    monkeypatch.setattr(transport, "tls_context", lambda: client)
    monkeypatch.setattr(socket, "getaddrinfo", FakeDNS(["127.0.0.1"]))
    yield server.server_address[1], server_names, requests
    server.shutdown()
    server.server_close()


def test_https_sends_the_urls_name_as_sni_and_verifies_the_certificate_for_it(tls_receiver, publisher):
    port, server_names, requests = tls_receiver
    queue(f"https://hooks.example:{port}/hook", publisher)
    [attempt] = delivery.deliver_due()
    assert (attempt.status, attempt.last_status_code) == (DeliveryStatus.DELIVERED, 204)
    assert server_names == ["hooks.example"]
    assert requests[0]["Host"] == f"hooks.example:{port}"


def test_https_refuses_a_certificate_for_another_name(tls_receiver, publisher):
    port, server_names, requests = tls_receiver
    queue(f"https://other.example:{port}/hook", publisher)
    [attempt] = delivery.deliver_due()
    assert attempt.status == DeliveryStatus.PENDING and "certificate" in attempt.last_error.lower()
    assert server_names == ["other.example"] and requests == []


# ------------------------------------------------------------------------------------------ deadline
@pytest.fixture
def dripping_receiver():
    """Answers a status line, then one header byte every 0.2 s (each read is quick, the answer never ends)."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        conn, _ = listener.accept()
        with conn:
            conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
            for _ in range(50):  # 10 s at most
                if stop.wait(0.2):
                    return
                try:
                    conn.sendall(b"a")
                except OSError:
                    return

    threading.Thread(target=serve, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
    stop.set()
    listener.close()


def test_a_receiver_answering_byte_by_byte_is_cut_off_at_the_attempt_deadline(
        dripping_receiver, loopback_allowed, publisher, monkeypatch):
    monkeypatch.setattr(delivery, "ATTEMPT_S", 1.0)
    queue(dripping_receiver, publisher)
    started = time.monotonic()
    [attempt] = delivery.deliver_due()
    assert time.monotonic() - started < 4.0
    assert attempt.status == DeliveryStatus.PENDING and "TimeoutError" in attempt.last_error
