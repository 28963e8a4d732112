"""A local HTTP receiver that answers with scripted status codes (and optionally slowly) and records
what it got; loopback is reached through WEBHOOKS_ALLOWED_NETWORKS, as an operator would allow it."""

from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(autouse=True)
def no_webhook_thread(settings):
    settings.WEBHOOKS_DELIVERY_THREAD = False


LOOPBACK_NETWORKS = "127.0.0.0/8,::1/128"


class Receiver:
    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self.statuses: list[int] = []  # answers in order; the last one repeats
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.delay_s = 0.0  # how long each answer takes
        self.answer_body = b""  # sent after the status line and headers
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                with receiver.lock:
                    receiver.requests.append((dict(self.headers), body))
                    index = min(len(receiver.requests), len(receiver.statuses)) - 1
                if receiver.delay_s:
                    time.sleep(receiver.delay_s)
                self.send_response(receiver.statuses[index] if receiver.statuses else 200)
                self.send_header("Content-Length", str(len(receiver.answer_body)))
                self.end_headers()
                self.wfile.write(receiver.answer_body)

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://{host}:{self.port}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def loopback_allowed(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = LOOPBACK_NETWORKS


@pytest.fixture
def receiver(loopback_allowed):
    server = Receiver()
    yield server
    server.close()
