"""A local HTTP receiver that answers with scripted status codes and records what it got."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest


@pytest.fixture(autouse=True)
def no_webhook_thread(settings):
    settings.WEBHOOKS_DELIVERY_THREAD = False


class Receiver:
    def __init__(self) -> None:
        self.statuses: list[int] = []  # answers in order; the last one repeats
        self.requests: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.requests.append((dict(self.headers), body))
                index = min(len(receiver.requests), len(receiver.statuses)) - 1
                self.send_response(receiver.statuses[index] if receiver.statuses else 200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver(settings):
    settings.WEBHOOKS_ALLOW_LOOPBACK = True
    server = Receiver()
    yield server
    server.close()
