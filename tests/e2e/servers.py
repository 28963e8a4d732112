"""Shared helpers for the end-to-end notification tests: real processes, real sockets.

* ``manage(env, ...)``: run ``manage.py`` in a child process (fails the test with its output);
* ``Server``: a daphne worker on a free port, started, waited for, stopped; its log is dumped
  into the failure message when it dies or a test fails while it runs;
* ``Http``/``SseStream``: a minimal HTTP/1.1 client on asyncio streams (the project pins no
  HTTP client library; this one also lets a test read an open SSE stream frame by frame);
* ``changed_fixture``: a copy of the conformance fixture with test://watched-resource changed.

Every wait is bounded, so no test can hang.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "conformance.yaml"
WATCHED = "test://watched-resource"
WATCHED_TEXT = "text: Watched resource content"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
SUB_ID_KEY = "io.modelcontextprotocol/subscriptionId"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def base_env(database_url: str, redis_url: str | None = None) -> dict[str, str]:
    """The environment of every child process: one database, Redis only when given."""
    env = dict(os.environ, DATABASE_URL=database_url, MCP_ALLOW_ANONYMOUS="1",
               ALLOWED_HOSTS="127.0.0.1,localhost", DJANGO_SETTINGS_MODULE="config.settings",
               PYTHONUNBUFFERED="1")
    env.pop("REDIS_URL", None)
    if redis_url:
        env["REDIS_URL"] = redis_url
    return env


def manage(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    """``python manage.py *args`` in a separate process; the test fails with its output if it fails."""
    try:
        done = subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True,
                              text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"manage.py {' '.join(args)} did not finish in {timeout} s: {exc.stdout!r} {exc.stderr!r}")
    if done.returncode != 0:
        pytest.fail(f"manage.py {' '.join(args)} exited {done.returncode}\n--- stdout\n{done.stdout}\n"
                    f"--- stderr\n{done.stderr}")
    return done


def prepare_database(env: dict[str, str]) -> None:
    """Migrate and publish the conformance fixture (the command line acts as the operator).

    A SQLite database is a copy of a template that the first call of the run made with the same
    two commands (SQLite's backup API): the same rows and stored bytes, without a migrate and an
    import in every module. PostgreSQL databases run the commands each time."""
    url = env["DATABASE_URL"]
    if not url.startswith("sqlite:///"):
        _migrate_and_import(env)
        return
    key = env.get("MEDIA_ROOT", "")  # the stored bytes must be where the copy's rows expect them
    template = _TEMPLATES.get(key)
    if template is None:
        folder = Path(tempfile.mkdtemp(prefix="e2e-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        template = folder / "template.sqlite3"
        _migrate_and_import({**env, "DATABASE_URL": f"sqlite:///{template}"})
        _TEMPLATES[key] = template
    source, target = sqlite3.connect(template), sqlite3.connect(url.removeprefix("sqlite:///"))
    try:
        source.backup(target)
    finally:
        source.close()
        target.close()


_TEMPLATES: dict[str, Path] = {}  # MEDIA_ROOT -> the migrated, imported SQLite file of this run


def _migrate_and_import(env: dict[str, str]) -> None:
    manage(env, "migrate", "--noinput")
    manage(env, "registry_import", str(FIXTURE), "--publish", "--note", "e2e fixture")


def changed_fixture(folder: Path, text: str, name: str = "changed.yaml") -> Path:
    """The conformance fixture with test://watched-resource's text replaced by ``text``."""
    source = FIXTURE.read_text(encoding="utf-8")
    assert source.count(WATCHED_TEXT) == 1, "the fixture's watched resource text moved; update the tests"
    path = folder / name
    path.write_text(source.replace(WATCHED_TEXT, "text: " + json.dumps(text)), encoding="utf-8")
    return path


def wait_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError as exc:
            if proc is not None and proc.poll() is not None:
                raise RuntimeError(f"process exited with {proc.returncode} before listening on {port}") from None
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s") from exc
            time.sleep(0.05)


class Server:
    """One daphne worker serving ``config.asgi:application`` on a free port (``command``: another
    server's command line, with ``{port}`` in place of the port)."""

    def __init__(self, name: str, env: dict[str, str], folder: Path, command: list[str] | None = None) -> None:
        self.name = name
        self.env = env
        self.port = free_port()
        self.command = command or ["-m", "daphne", "-b", "127.0.0.1", "-p", "{port}", "config.asgi:application"]
        self.log_path = folder / f"{name}.log"
        self.proc: subprocess.Popen | None = None
        self._log = None

    def start(self) -> Server:
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [sys.executable, *(part.replace("{port}", str(self.port)) for part in self.command)],
            cwd=ROOT, env=self.env, stdout=self._log, stderr=subprocess.STDOUT)
        try:
            wait_port(self.port, self.proc)
        except RuntimeError as exc:
            self.stop()
            pytest.fail(f"{self.name} did not start: {exc}\n{self.log()}")
        return self

    def log(self, tail: int = 4000) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return f"--- {self.name}: no log"
        return f"--- {self.name} log (last {tail} chars)\n{text[-tail:]}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


@contextmanager
def logs_on_failure(*servers: Server) -> Iterator[None]:
    """Append the servers' logs to any failure raised inside the block."""
    try:
        yield
    except BaseException:
        # Captured output is shown with the failure; the servers' logs say what they saw.
        print("\n".join(s.log() for s in servers))
        raise


# ----------------------------------------------------------------------------- HTTP client

def modern_headers(method: str, name: str | None = None) -> dict[str, str]:
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": method}
    if name is not None:
        headers["Mcp-Name"] = name
    return headers


def modern_body(method: str, params: dict[str, Any] | None = None, rid: int = 1) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
    return {"jsonrpc": "2.0", "id": rid, "method": method, "params": {**(params or {}), "_meta": meta}}


async def _open(port: int, method: str, path: str, headers: dict[str, str], body: bytes | None,
                timeout: float) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, int, dict[str, str]]:
    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", port), timeout)
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}"]
    all_headers = {"Accept": "application/json, text/event-stream", **headers}
    if body is not None:
        all_headers.setdefault("Content-Type", "application/json")
        all_headers["Content-Length"] = str(len(body))
    lines += [f"{k}: {v}" for k, v in all_headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode() + (body or b""))
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    status = int(status_line.split()[1])
    got: dict[str, str] = {}
    for line in header_lines:
        if ":" in line:
            k, v = line.split(":", 1)
            got[k.strip().lower()] = v.strip()
    return reader, writer, status, got


async def request(port: int, method: str, path: str = "/mcp", *, headers: dict[str, str] | None = None,
                  json_body: Any = None, raw_body: bytes | None = None,
                  timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """One request on its own connection -> (status, lower-cased headers, body)."""
    body = raw_body if raw_body is not None else (None if json_body is None else json.dumps(json_body).encode())
    reader, writer, status, got = await _open(port, method, path, {"Connection": "close", **(headers or {})},
                                              body, timeout)
    try:
        if "content-length" in got:
            data = await asyncio.wait_for(reader.readexactly(int(got["content-length"])), timeout)
        elif got.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                chunk = await asyncio.wait_for(_read_chunk(reader), timeout)
                if chunk is None:
                    break
                data += chunk
        else:
            data = await asyncio.wait_for(reader.read(), timeout)
    finally:
        writer.close()
    return status, got, data


def json_of(status: int, headers: dict[str, str], body: bytes) -> Any:
    """The JSON-RPC message of a reply, whether sent as JSON or as one SSE event."""
    assert status == 200, f"HTTP {status}: {body[:500]!r}"
    if headers.get("content-type", "").startswith("text/event-stream"):
        events = [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]
        assert len(events) == 1, body
        return events[0]
    return json.loads(body)


async def _read_chunk(reader: asyncio.StreamReader) -> bytes | None:
    size_line = await reader.readuntil(b"\r\n")
    size = int(size_line.split(b";")[0].strip(), 16)
    if size == 0:
        await reader.readuntil(b"\r\n")
        return None
    data = await reader.readexactly(size)
    await reader.readexactly(2)
    return data


class SseStream:
    """An open text/event-stream response, read event by event (keep-alive comments skipped)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int,
                 headers: dict[str, str]) -> None:
        self.reader, self.writer, self.status, self.headers = reader, writer, status, headers
        self.buffer = b""
        self.ended = False
        self.last_event_id: str | None = None

    @classmethod
    async def open(cls, port: int, method: str, *, headers: dict[str, str], json_body: Any = None,
                   timeout: float = 10.0) -> SseStream:
        body = None if json_body is None else json.dumps(json_body).encode()
        reader, writer, status, got = await _open(port, method, "/mcp", headers, body, timeout)
        stream = cls(reader, writer, status, got)
        if status != 200 or not got.get("content-type", "").startswith("text/event-stream"):
            rest = await asyncio.wait_for(reader.read(2000), timeout)
            writer.close()
            raise AssertionError(f"{method} /mcp did not open a stream: HTTP {status} {got} {rest!r}")
        return stream

    async def _more(self) -> None:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            chunk = await _read_chunk(self.reader)
        else:
            chunk = await self.reader.read(65536) or None
        if chunk is None:
            self.ended = True
            raise EOFError("the server ended the stream")
        self.buffer += chunk.replace(b"\r\n", b"\n")

    async def next_message(self, timeout: float) -> dict[str, Any]:
        """The next SSE event's JSON data; asyncio.TimeoutError when none arrives in time."""
        async def one() -> dict[str, Any]:
            while True:
                while b"\n\n" in self.buffer:
                    block, self.buffer = self.buffer.split(b"\n\n", 1)
                    lines = block.split(b"\n")
                    for line in lines:
                        if line.startswith(b"id:"):
                            self.last_event_id = line[3:].strip().decode()
                    data = [line[5:].strip() for line in lines if line.startswith(b"data:")]
                    if any(data):  # an id-only (priming) event carries no message
                        return json.loads(b"\n".join(data))
                await self._more()
        return await asyncio.wait_for(one(), timeout)

    async def raw(self, timeout: float) -> bytes:
        """The next bytes the server sends, comments included (b"" once the stream has ended)."""
        if self.buffer:
            data, self.buffer = self.buffer, b""
            return data
        try:
            await asyncio.wait_for(self._more(), timeout)
        except EOFError:
            return b""
        data, self.buffer = self.buffer, b""
        return data

    async def expect_silence(self, seconds: float) -> None:
        """Assert that no message arrives for ``seconds`` (keep-alive comments are fine)."""
        try:
            message = await self.next_message(seconds)
        except TimeoutError:
            return
        raise AssertionError(f"expected no notification, got {message}")

    def close(self) -> None:
        self.writer.close()


async def legacy_initialize(port: int) -> str:
    """A 2025-11-25 session on worker ``port``: initialize + initialized; returns Mcp-Session-Id."""
    status, headers, body = await request(port, "POST", json_body={
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "e2e", "version": "1"}}})
    result = json_of(status, headers, body)
    assert result["result"]["protocolVersion"] == LEGACY, result
    sid = headers["mcp-session-id"]
    status, _h, body = await request(port, "POST", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY},
                                     json_body={"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert status == 202, (status, body)
    return sid


async def legacy_call(port: int, sid: str, method: str, params: dict[str, Any] | None = None,
                      rid: int = 2) -> dict[str, Any]:
    status, headers, body = await request(
        port, "POST", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY},
        json_body={"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
    reply = json_of(status, headers, body)
    assert "error" not in reply, reply
    return reply["result"]


async def modern_call(port: int, method: str, params: dict[str, Any] | None = None, *, name: str | None = None,
                      rid: int = 3) -> dict[str, Any]:
    status, headers, body = await request(port, "POST", headers=modern_headers(method, name),
                                          json_body=modern_body(method, params, rid))
    reply = json_of(status, headers, body)
    assert "error" not in reply, reply
    return reply["result"]


async def open_listen(port: int, uris: list[str], rid: int = 7,
                      token: str | None = None) -> tuple[SseStream, dict[str, Any]]:
    """A 2026-07-28 subscriptions/listen stream for ``uris``; returns it and its acknowledgement."""
    headers = modern_headers("subscriptions/listen")
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    stream = await SseStream.open(port, "POST", headers=headers,
                                  json_body=modern_body("subscriptions/listen",
                                                        {"notifications": {"resourceSubscriptions": uris}}, rid))
    ack = await stream.next_message(5)
    assert ack["method"] == "notifications/subscriptions/acknowledged", ack
    assert ack["params"]["_meta"][SUB_ID_KEY] == rid, ack
    assert ack["params"]["notifications"]["resourceSubscriptions"] == uris, ack
    return stream, ack


async def open_get_stream(port: int, sid: str) -> SseStream:
    return await SseStream.open(port, "GET", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY,
                                                      "Accept": "text/event-stream"})


async def wait_updated(stream: SseStream, uri: str, timeout: float) -> dict[str, Any]:
    """The next notifications/resources/updated for ``uri`` (other notifications are skipped)."""
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no notifications/resources/updated for {uri} within {timeout} s")
        try:
            message = await stream.next_message(left)
        except TimeoutError:
            raise AssertionError(f"no notifications/resources/updated for {uri} within {timeout} s") from None
        if message.get("method") == "notifications/resources/updated" and message["params"]["uri"] == uri:
            return message


async def amanage(env: dict[str, str], *args: str, timeout: float = 60) -> str:
    """``manage.py *args`` in a separate process without blocking the event loop (streams stay read)."""
    proc = await asyncio.create_subprocess_exec(sys.executable, "manage.py", *args, cwd=ROOT, env=env,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        pytest.fail(f"manage.py {' '.join(args)} did not finish in {timeout} s")
    if proc.returncode != 0:
        pytest.fail(f"manage.py {' '.join(args)} exited {proc.returncode}\n--- stdout\n{out.decode()}\n"
                    f"--- stderr\n{err.decode()}")
    return out.decode()
