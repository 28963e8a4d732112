"""A real SMTP server on loopback for the e-mail tests (aiosmtpd), recording every message it accepts."""

from __future__ import annotations

import email
import email.policy
import socket
import threading
from email.message import EmailMessage

from aiosmtpd.controller import Controller


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Recorder:
    def __init__(self) -> None:
        self.messages: list[EmailMessage] = []
        self.lock = threading.Lock()
        self.refuse: dict[str, str] = {}  # recipient address -> the reply that refuses it ("550 ...", "451 ...")

    async def handle_RCPT(self, server, session, envelope, address, rcpt_options) -> str:
        with self.lock:
            reply = self.refuse.get(address)
        if reply is not None:
            return reply
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, server, session, envelope) -> str:
        parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
        with self.lock:
            self.messages.append(parsed)  # type: ignore[arg-type]
        return "250 OK"


class SmtpServer:
    """Start, stop (an outage) and start again on the same port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.recorder = Recorder()
        self.controller: Controller | None = None

    def start(self) -> None:
        self.controller = Controller(self.recorder, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    def stop(self) -> None:
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    @property
    def messages(self) -> list[EmailMessage]:
        with self.recorder.lock:
            return list(self.recorder.messages)

    def refuse(self, address: str, reply: str | None) -> None:
        """Answer RCPT TO `address` with `reply` from now on (None: accept it again)."""
        with self.recorder.lock:
            if reply is None:
                self.recorder.refuse.pop(address, None)
            else:
                self.recorder.refuse[address] = reply

    def to(self, address: str) -> list[EmailMessage]:
        return [m for m in self.messages if address in str(m["To"])]

    @staticmethod
    def parts(message: EmailMessage) -> tuple[str, str]:
        """(plain text, HTML) of a message."""
        text = message.get_body(("plain",))
        html = message.get_body(("html",))
        return (text.get_content() if text else "", html.get_content() if html else "")
