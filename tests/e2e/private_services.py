"""Private PostgreSQL clusters and Redis servers for fault-injection tests: started on a free
port inside the test's folder, stopped and restarted by the test, never the machine's shared
services. Where the binaries are absent the test is skipped with the reason."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from .servers import free_port, wait_port


def _pg_bin() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))
    if not found and shutil.which("pg_ctl"):
        found = [shutil.which("pg_ctl")]
    if not found:
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found under /usr/lib/postgresql/*/bin")
    return Path(found[-1]).parent


class PostgresCluster:
    """``initdb`` + ``pg_ctl`` on a free port, trust authentication, socket in the folder."""

    def __init__(self) -> None:
        self.bin = _pg_bin()
        # Its own folder under /tmp: a pytest tmp_path sits in a root-only directory, which a
        # cluster run as `postgres` could not enter.
        self.folder = Path(tempfile.mkdtemp(prefix="mcp-pg-"))
        self.data = self.folder / "pgdata"
        self.port = free_port()
        self.log = self.folder / "postgres.log"
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root: run the cluster as `postgres`
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                pytest.skip("running as root and no `postgres` user to own a private cluster")
            if not shutil.which("runuser"):
                pytest.skip("running as root without runuser to start a private cluster as `postgres`")
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str, timeout: float = 120) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} failed: {done.stdout} {done.stderr}")

    def remove(self) -> None:
        shutil.rmtree(self.folder, ignore_errors=True)

    def init(self) -> PostgresCluster:
        self.folder.chmod(0o777)
        self.data.mkdir()
        self.log.touch()
        self.log.chmod(0o666)
        if self._as:
            shutil.chown(self.data, "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", "postgres", "--auth=trust", "-E", "UTF8")
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w", "start")
        wait_port(self.port)

    def stop(self) -> None:
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def running(self) -> bool:
        return subprocess.run([*self._as, str(self.bin / "pg_ctl"), "-D", str(self.data), "status"],
                              capture_output=True).returncode == 0

    def url(self, database: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        import psycopg

        with psycopg.connect(self.url(), autocommit=True, connect_timeout=5) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)


class RedisServer:
    """A private ``redis-server`` on a free port (no persistence), killed and restarted by the test."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        if binary is None:
            pytest.skip("redis-server not found on PATH")
        self.binary = binary
        self.folder = folder
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen([self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                                      "--appendonly", "no", "--dir", str(self.folder)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_port(self.port, self.proc)

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # the port is free again once the process is gone
            try:
                import socket

                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                time.sleep(0.05)
            except OSError:
                return

    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"
