"""The registries the clients run against: throwaway servers of this repository on loopback ports.

Each holds the conformance fixtures in its own SQLite database; the protected one has a
pre-shared token and a staff user who consents to OAuth. `trigger()` is the command that
publishes a change while a client listens.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from matrix_paths import FIXTURE, HERE, PY, ROOT

OAUTH_USER, OAUTH_PASSWORD = "matrix-person", "matrix-password-not-secret"  # staff user who consents


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    name: str
    anonymous: bool
    folder: Path
    port: int = 0
    proc: subprocess.Popen | None = None
    env: dict[str, str] = field(default_factory=dict)
    token: str = ""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    @property
    def database(self) -> Path:
        return self.folder / f"{self.name}.sqlite3"

    def start(self) -> Server:
        self.port = free_port()
        self.env = dict(
            os.environ,
            DATABASE_URL=f"sqlite:///{self.database}",
            MCP_ALLOW_ANONYMOUS="1" if self.anonymous else "0",
            DJANGO_DEBUG="0",
            ALLOWED_HOSTS="127.0.0.1,localhost",
            DJANGO_SETTINGS_MODULE="config.settings",
            DJANGO_SECRET_KEY=f"client-matrix-{time.time_ns()}-not-secret",
            PYTHONUNBUFFERED="1",
        )
        self.env.pop("REDIS_URL", None)
        for args in (
            ["migrate", "--noinput"],
            ["registry_import", str(FIXTURE), "--publish", "--note", "conformance fixtures"],
        ):
            subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=self.env, check=True, capture_output=True)
        if not self.anonymous:
            self.token = subprocess.run(
                [
                    PY,
                    "manage.py",
                    "shell",
                    "-v",
                    "0",
                    "-c",
                    "from registry.serving.clients import create_client; print(create_client(name='matrix')[1])",
                ],
                cwd=ROOT,
                env=self.env,
                check=True,
                capture_output=True,
                text=True,
            ).stdout.split()[-1]
            subprocess.run(
                [
                    PY,
                    "manage.py",
                    "shell",
                    "-v",
                    "0",
                    "-c",
                    (
                        "from django.contrib.auth.models import User; User.objects.create_user("
                        f"{OAUTH_USER!r}, 'm@example.com', {OAUTH_PASSWORD!r}, is_staff=True)"
                    ),
                ],
                cwd=ROOT,
                env=self.env,
                check=True,
                capture_output=True,
            )
        log = open(self.folder / f"{self.name}.log", "wb")  # noqa: SIM115 - lives as long as the server
        self.proc = subprocess.Popen(
            [
                PY,
                "-m",
                "daphne",
                "-v",
                "1",
                "-b",
                "127.0.0.1",
                "-p",
                str(self.port),
                "config.asgi:application",
            ],
            cwd=ROOT,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.5).close()
                return self
            except OSError:
                if time.monotonic() > deadline or self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} server did not start: {self.log()[-2000:]}") from None
                time.sleep(0.1)

    def log(self) -> str:
        return (self.folder / f"{self.name}.log").read_text(errors="replace")

    def trigger(self) -> str:
        """The shell command that publishes a change of test://watched-resource on this server."""
        env = " ".join(
            f"{k}={self.env[k]}"
            for k in (
                "DATABASE_URL",
                "DJANGO_SETTINGS_MODULE",
                "DJANGO_DEBUG",
                "DJANGO_SECRET_KEY",
                "ALLOWED_HOSTS",
            )
        )
        return f"cd {ROOT} && env {env} {PY} {HERE / 'touch_watched.py'}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
