#!/usr/bin/env python3
"""Availability: what anonymous clients can make one daphne worker spend (issue 19, items 7-12),
measured on any checkout, so one run gives the baseline and the fixed code side by side.

For each --tree (a checkout: its code is served and its conformance fixture imported, with two
patterned prompts and a 100 KB resource added) start one daphne worker like production (DEBUG
off, SQLite, anonymous MCP allowed) pinned to CPU 0, drive it from CPU 1, and measure from
outside (HTTP, /proc/PID/{stat,status,io}, the SQLite file):

  7  prompts/get with a 1 MB value for an argument patterned (\\w+\\s?){1,50}$, without and with
     max_length (2,000,000), the prompt warm (asked for once before): its time and answer,
     another client's worst prompts/list meanwhile.
  8  a 300 MiB POST to /mcp and to /admin/login/ (Content-Length), and to /mcp chunked: time to
     the answer, what the client had sent by then, what the server wrote (wchar: temporary
     files, logs).
  9  25 anonymous POST /register from one address, 2 carrying 2.4 MB of redirect URIs from a
     second, 5 registrations of confidential clients from a third, 12 revocations with a wrong
     client secret from a fourth: server CPU and wall time per request, bytes stored per
     request (every column of every table, before and after).
  10 10 token requests naming client metadata documents on a TLS host that drips its body a byte
     every 2 s, then the sign-ins (consent page) of two valid clients, one whose document is on
     another address, one on the dripping host's address, and the latter's again once the drip
     has ended: how long the dripping fetches are held, which sign-ins work.
     The tree's own fetcher is used; only the bench's three host names resolve to loopback and
     the bench's certificate is trusted (avail_settings/avail_cimd, written to the run's folder).
  11 a 1 MB 2025-03-26 batch of prompts/list, then a batch of 100 reads of the 100 KB resource:
     answer, response size, the server's RSS growth, another client's worst latency. Run first,
     on the fresh server: memory that earlier requests freed is reused without growing RSS.
  12 300 connections that send half a request head: how long the server keeps them, another
     client's worst latency meanwhile.

Behaviour that would take minutes is cut at --cap seconds (default 30) and shown as "> 30 s".
A scenario the tree cannot run (no client metadata documents, no 2025-03-26 batches) is skipped
with its reason. Prints a Markdown table with one column per tree and writes the figures to
bench/results/availability-<time>.json. Run from a checkout, with the project's interpreter:

  .venv/bin/python bench/availability.py --tree ../old-checkout --tree . [--cap 30] [--only 7,11]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import hashlib
import json
import os
import re
import select
import shutil
import socket
import sqlite3
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, pinned, wait_port
from soak import rss_mib

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
MIB = 1024 * 1024
MODERN, BATCHES = "2026-07-28", "2025-03-26"
ACCEPT = "application/json, text/event-stream"
PASSWORD = "bench-password-not-secret"  # the bench superuser's, in a throwaway database
SECRET = "bench-confidential-secret"  # the confidential client's, ditto
PATTERN = r"(\w+\s?){1,50}$"
DRIP, SHARED, GOOD = "drip.bench.test", "shared.bench.test", "good.bench.test"
HOSTS = {DRIP: "127.0.0.1", SHARED: "127.0.0.1", GOOD: "127.0.0.2"}  # fetches are limited per address
Row = tuple[str, str, str]  # item, measure, value

BENCH_FIXTURE = """\
prompts:
  - name: long-note
    description: A note checked against a pattern, no maximum length.
    arguments:
      - {name: note, required: true, pattern: '%(pattern)s'}
    messages:
      - text: "{{ note }}"
  - name: long-note-capped
    description: The same pattern with max_length 2,000,000.
    arguments:
      - {name: note, required: true, pattern: '%(pattern)s', max_length: 2000000}
    messages:
      - text: "{{ note }}"
resources:
  - uri: docs://big-document
    name: big-document
    description: 100 KB of text, for batches of reads.
    mime_type: text/plain
    text: %(text)s
"""

SETTINGS_OVERLAY = """\
# The tree's settings; its own metadata-document fetcher, wrapped by avail_cimd (bench only).
from config.settings import *  # noqa: F401,F403
from config.settings import OAUTH2_PROVIDER as _TREE

AVAIL_TREE_FETCHER = _TREE.get("CIMD_METADATA_FETCHER", "oauth2_provider.cimd.SafeMetadataFetcher")
OAUTH2_PROVIDER = {**_TREE, "CIMD_METADATA_FETCHER": "avail_cimd.Fetcher"}
"""

CIMD_OVERLAY = """\
# The tree's fetcher, with the bench's host names resolved to loopback (every other name as before).
import json
import os

from django.conf import settings
from django.utils.module_loading import import_string
from oauth2_provider import cimd

_HOSTS = json.loads(os.environ["AVAIL_CIMD_HOSTS"])
_resolve = cimd._resolve_and_validate


def _bench_resolve(hostname, port):
    return [_HOSTS[hostname]] if hostname in _HOSTS else _resolve(hostname, port)


cimd._resolve_and_validate = _bench_resolve
Fetcher = import_string(settings.AVAIL_TREE_FETCHER)
"""

PROBE = f"""
import json
from django.contrib.auth.models import User
from oauth2_provider.models import Application
from oauth2_provider.settings import oauth2_settings
u, _ = User.objects.get_or_create(username='bench', defaults={{'is_superuser': True, 'is_staff': True}})
u.set_password('{PASSWORD}'); u.save()
app = Application.objects.create(name='bench confidential', client_type='confidential',
                                 client_secret='{SECRET}', authorization_grant_type='authorization-code',
                                 redirect_uris='http://127.0.0.1/cb')
cimd = bool(getattr(oauth2_settings, 'CIMD_ENABLED', False))
print(json.dumps({{'client_id': app.client_id, 'cimd': cimd}}))
"""


# ----------------------------------------------------------------------------- the server

@dataclass
class Served:
    tree: Path
    folder: Path
    port: int
    pid: int
    confidential_id: str
    cimd: bool
    cap: float

    @property
    def db(self) -> Path:
        return self.folder / "avail.sqlite3"


def commit_of(tree: Path) -> str:
    return subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True,
                          text=True).stdout.strip() or tree.name


def certificate(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    names = ",".join(f"DNS:{name}" for name in HOSTS)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", "/CN=bench.test", "-addext", f"subjectAltName={names}",
                    "-keyout", str(key), "-out", str(cert)], check=True, capture_output=True)
    return cert, key


def server_env(folder: Path, cert: Path) -> dict[str, str]:
    overlay = folder / "overlay"
    overlay.mkdir()
    (overlay / "avail_settings.py").write_text(SETTINGS_OVERLAY)
    (overlay / "avail_cimd.py").write_text(CIMD_OVERLAY)
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{folder}/avail.sqlite3", MEDIA_ROOT=str(folder / "media"),
               MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789abcdef",
               DJANGO_SETTINGS_MODULE="avail_settings", PYTHONPATH=str(overlay), SSL_CERT_FILE=str(cert),
               AVAIL_CIMD_HOSTS=json.dumps(HOSTS), PYTHONUNBUFFERED="1")
    env.pop("REDIS_URL", None)
    return env


def manage(tree: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([PY, "manage.py", *args], cwd=tree, env=env, capture_output=True, text=True,
                          timeout=600)
    if done.returncode != 0:
        sys.exit(f"{tree}: manage.py {' '.join(args[:2])} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def prepare(tree: Path, folder: Path, env: dict[str, str]) -> dict[str, Any]:
    """Migrate, import the tree's conformance fixture and the bench's prompts, add the bench users."""
    fixtures = folder / "fixtures"
    fixtures.mkdir()
    shutil.copy(tree / "tests" / "fixtures" / "conformance.yaml", fixtures / "conformance.yaml")
    text = json.dumps(("All work and no play makes a long document. " * 2500)[:100_000])
    (fixtures / "bench.yaml").write_text(BENCH_FIXTURE % {"pattern": PATTERN, "text": text})
    manage(tree, env, "migrate", "--noinput")
    manage(tree, env, "registry_import", str(fixtures), "--publish", "--note", "availability bench")
    return json.loads(manage(tree, env, "shell", "-v", "0", "-c", PROBE).strip().splitlines()[-1])


def start_server(tree: Path, env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    cmd = [PY, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"]
    with log.open("wb") as out:  # the server keeps its own copy of the file
        proc = subprocess.Popen(pinned(0, cmd), cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
    wait_port(port)
    return proc


def stop_server(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


# ----------------------------------------------------------------------------- /proc and SQLite

def proc_field(pid: int, name: str, key: str) -> int:
    for line in Path(f"/proc/{pid}/{name}").read_text().splitlines():
        if line.startswith(key):
            return int(line.split()[1])
    raise RuntimeError(f"no {key} in /proc/{pid}/{name}")


def written(pid: int) -> int:
    """Bytes the process has passed to write() and friends (files, pipes, sockets)."""
    return proc_field(pid, "io", "wchar:")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime, all threads


def stored_bytes(db: Path) -> int:
    """The bytes of every value of every column of every table."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        total = 0
        for table in tables:
            columns = [row[1] for row in conn.execute(f'PRAGMA table_info("{table}")')]
            lengths = " + ".join(f'coalesce(length(cast("{c}" AS BLOB)), 0)' for c in columns)
            total += conn.execute(f'SELECT coalesce(sum({lengths}), 0) FROM "{table}"').fetchone()[0]
        return total


# ----------------------------------------------------------------------------- HTTP client

@dataclass
class Reply:
    status: int
    headers: dict[str, str]
    body: bytes
    seconds: float
    cookies: dict[str, str] = field(default_factory=dict)


def request_head(method: str, path: str, port: int, headers: dict[str, str], length: int | None) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Connection: close"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


async def read_head(reader: asyncio.StreamReader) -> tuple[int, dict[str, str], dict[str, str]]:
    status_line, *lines = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
    headers: dict[str, str] = {}
    cookies: dict[str, str] = {}
    for line in lines:
        name, _, value = line.partition(":")
        if name.strip().lower() == "set-cookie":
            key, _, rest = value.strip().partition("=")
            cookies[key] = rest.split(";", 1)[0]
        elif name:
            headers[name.strip().lower()] = value.strip()
    return int(status_line.split()[1]), headers, cookies


async def read_body(reader: asyncio.StreamReader, headers: dict[str, str]) -> bytes:
    if "content-length" in headers:
        return await reader.readexactly(int(headers["content-length"]))
    if headers.get("transfer-encoding", "").lower() != "chunked":
        return await reader.read()
    data = bytearray()
    while size := int((await reader.readuntil(b"\r\n")).split(b";")[0], 16):
        data += await reader.readexactly(size)
        await reader.readexactly(2)
    await reader.readuntil(b"\r\n")
    return bytes(data)


async def http(port: int, method: str, path: str, *, headers: dict[str, str] | None = None,
               body: bytes | None = None, source: str = "127.0.0.1", timeout: float = 60.0) -> Reply:
    """One request on its own connection (from `source`, a loopback address), bounded by `timeout`."""
    started = time.perf_counter()

    async def exchange() -> Reply:
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0), limit=MIB)
        try:
            length = None if body is None else len(body)
            writer.write(request_head(method, path, port, headers or {}, length) + (body or b""))
            await writer.drain()
            status, got, cookies = await read_head(reader)
            data = await read_body(reader, got)
            return Reply(status, got, data, time.perf_counter() - started, cookies)
        finally:
            writer.close()
    return await asyncio.wait_for(exchange(), timeout)


def modern(method: str, params: dict[str, Any]) -> tuple[dict[str, str], bytes]:
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": {}}
    headers = {"Content-Type": "application/json", "Accept": ACCEPT, "MCP-Protocol-Version": MODERN,
               "Mcp-Method": method}
    if "name" in params:
        headers["Mcp-Name"] = params["name"]
    return headers, json.dumps({"jsonrpc": "2.0", "id": 1, "method": method,
                                "params": {**params, "_meta": meta}}).encode()


async def mcp(port: int, method: str, params: dict[str, Any] | None = None, timeout: float = 60.0) -> Reply:
    headers, body = modern(method, params or {})
    return await http(port, "POST", "/mcp", headers=headers, body=body, timeout=timeout)


def message(reply: Reply) -> Any:
    """The JSON-RPC message(s) of a reply, sent as JSON or as one SSE event."""
    if reply.headers.get("content-type", "").startswith("text/event-stream"):
        return json.loads(b"".join(line[5:] for line in reply.body.splitlines() if line.startswith(b"data:")))
    return json.loads(reply.body)


def seconds(value: float | None, cap: float) -> str:
    return f"> {cap:.0f} s" if value is None else f"{value:.2f} s"


def size(n: float) -> str:
    return f"{n / 1e6:,.2f} MB" if n >= 100_000 else f"{n:,.0f} B"


def summary(reply: Reply) -> str:
    """HTTP status and what a JSON-RPC reply says: its error, or how big the result is."""
    try:
        sent = message(reply)
    except ValueError:
        return f"HTTP {reply.status}, {len(reply.body):,} bytes"
    if isinstance(sent, dict) and "error" in sent:
        return f"HTTP {reply.status}, error {sent['error']['code']}: {sent['error']['message'][:100]}"
    return f"HTTP {reply.status}, result of {size(len(reply.body))}"


async def settle(served: Served, limit: float = 300.0) -> None:
    """Wait until the server answers prompts/list again (a scenario may leave it busy)."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if (await mcp(served.port, "prompts/list", timeout=deadline - time.monotonic())).status == 200:
                return
        except (TimeoutError, OSError, asyncio.IncompleteReadError):
            await asyncio.sleep(1)
    raise RuntimeError(f"the server did not answer prompts/list for {limit:.0f} s")


# ----------------------------------------------------------------------------- another client, RSS

class Watch:
    """While a scenario runs: another client's prompts/list in a loop (10 a second at most), and the
    server's RSS every 50 ms."""

    def __init__(self, served: Served) -> None:
        self.served = served
        self.latencies: list[float] = []
        self.failures = 0
        self.rss_base = self.rss_peak = rss_mib(served.pid)
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task] = []

    async def __aenter__(self) -> Watch:
        self._tasks = [asyncio.create_task(self._poll()), asyncio.create_task(self._sample())]
        await asyncio.sleep(0.3)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._stop.set()
        await asyncio.wait(self._tasks, timeout=self.served.cap * 4)
        for task in self._tasks:
            task.cancel()

    async def _poll(self) -> None:
        while not self._stop.is_set():
            started = time.perf_counter()
            try:
                ok = (await mcp(self.served.port, "prompts/list", timeout=self.served.cap * 4)).status == 200
            except (TimeoutError, OSError, asyncio.IncompleteReadError):
                ok = False
            self.latencies.append(time.perf_counter() - started)
            self.failures += not ok
            await asyncio.sleep(0.1)

    async def _sample(self) -> None:
        while not self._stop.is_set():
            self.rss_peak = max(self.rss_peak, rss_mib(self.served.pid))
            await asyncio.sleep(0.05)

    def worst(self) -> str:
        failed = f", {self.failures} failed" if self.failures else ""
        return f"{max(self.latencies, default=0) * 1000:,.0f} ms ({len(self.latencies)} requests{failed})"

    def growth(self) -> str:
        return f"+{self.rss_peak - self.rss_base:,.1f} MiB"


# ----------------------------------------------------------------------------- 7: patterns

async def patterns(served: Served) -> list[Row]:
    item, rows = "7 RE2 pattern", []
    value = "a" * 1_000_000
    for prompt, label in (("long-note", "no max_length"), ("long-note-capped", "max_length 2,000,000")):
        # Warm: a prompt in use has its content in memory, and then it is rendered where it is asked for.
        await mcp(served.port, "prompts/get", {"name": prompt, "arguments": {"note": "warm up"}})
        async with Watch(served) as watch:
            try:
                params = {"name": prompt, "arguments": {"note": value}}
                reply: Reply | None = await mcp(served.port, "prompts/get", params, timeout=served.cap * 4)
            except TimeoutError:
                reply = None
        took = seconds(reply.seconds if reply else None, served.cap * 4)
        rows += [(item, f"prompts/get, 1 MB value, {label}: time", took),
                 (item, f"prompts/get, 1 MB value, {label}: answer", summary(reply) if reply else "none"),
                 (item, f"another client's prompts/list meanwhile, {label}: worst", watch.worst())]
        await settle(served)
    return rows


# ----------------------------------------------------------------------------- 8: bodies

async def pump(writer: asyncio.StreamWriter, total: int, chunked: bool, sent: list[int]) -> None:
    data = b"x" * MIB
    frame = b"%x\r\n%s\r\n" % (MIB, data) if chunked else data
    try:
        while sent[0] < total:
            writer.write(frame)
            await writer.drain()
            sent[0] += MIB
        if chunked:
            writer.write(b"0\r\n\r\n")
    except (ConnectionError, OSError):
        pass  # the server answered and closed


async def huge_post(served: Served, path: str, total: int, chunked: bool) -> tuple[str, float | None, int]:
    """(status line, seconds to it or None past the cap, body bytes sent by then)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    headers = {"Content-Type": "application/json", "Accept": ACCEPT}
    if chunked:
        headers["Transfer-Encoding"] = "chunked"
    writer.write(request_head("POST", path, served.port, headers, None if chunked else total))
    sent = [0]
    started = time.perf_counter()
    sender = asyncio.create_task(pump(writer, total, chunked, sent))
    try:
        line = await asyncio.wait_for(reader.readline(), served.cap)
        return line.decode("latin-1").strip() or "connection closed", time.perf_counter() - started, sent[0]
    except TimeoutError:
        return "no answer", None, sent[0]
    finally:
        sender.cancel()
        writer.close()


async def bodies(served: Served) -> list[Row]:
    item, rows = "8 300 MiB bodies", []
    for path, chunked in (("/mcp", False), ("/admin/login/", False), ("/mcp", True)):
        label = f"POST {path}{', chunked' if chunked else ''}"
        before = written(served.pid)
        status, took, sent = await huge_post(served, path, 300 * MIB, chunked)
        await asyncio.sleep(1.0)
        rows += [(item, f"{label}: answer", status),
                 (item, f"{label}: time to the answer", seconds(took, served.cap)),
                 (item, f"{label}: sent to the socket by the client by then", f"{sent / MIB:,.0f} MiB"),
                 (item, f"{label}: written by the server (wchar)",
                  f"{(written(served.pid) - before) / MIB:,.1f} MiB")]
        await settle(served)
    return rows


# ----------------------------------------------------------------------------- 9: registrations

def registration(n: int, uris: list[str] | None = None, method: str = "none") -> bytes:
    return json.dumps({"client_name": f"bench {n}", "redirect_uris": uris or ["http://127.0.0.1:53682/callback"],
                       "token_endpoint_auth_method": method, "response_types": ["code"],
                       "grant_types": ["authorization_code", "refresh_token"]}).encode()


def large_uris() -> list[str]:
    """1,150 redirect URIs of 2,032 characters: 2.4 MB, under Django's 2.5 MB body limit."""
    return [f"https://app.example.com/cb/{n:04d}/" + "a" * 2000 for n in range(1150)]


async def sequence(served: Served, source: str, path: str, bodies_: list[bytes],
                   content_type: str) -> dict[str, Any]:
    """Send `bodies_` one after another from `source`: statuses, CPU, wall time, stored bytes (stops
    after 4 caps)."""
    cpu, stored, started = cpu_seconds(served.pid), stored_bytes(served.db), time.perf_counter()
    statuses: list[int] = []
    walls: list[float] = []
    for body in bodies_:
        if time.perf_counter() - started > served.cap * 4:
            break
        reply = await http(served.port, "POST", path, headers={"Content-Type": content_type}, body=body,
                           source=source, timeout=served.cap * 4)
        statuses.append(reply.status)
        walls.append(reply.seconds)
    n = len(statuses)
    return {"n": n, "of": len(bodies_), "statuses": statuses, "cpu": (cpu_seconds(served.pid) - cpu) / n,
            "wall": statistics.mean(walls), "stored": (stored_bytes(served.db) - stored) / n}


def status_counts(statuses: list[int]) -> str:
    return ", ".join(f"{s} x{statuses.count(s)}" for s in sorted(set(statuses)))


async def registrations(served: Served) -> list[Row]:
    item, rows = "9 registration", []
    form = "application/x-www-form-urlencoded"
    revoke = urllib.parse.urlencode({"token": "nope", "client_id": served.confidential_id,
                                     "client_secret": "wrong"}).encode()
    runs = (("25 POST /register, one address", "127.0.0.1", "/register", [registration(n) for n in range(25)],
             "application/json"),
            ("2 POST /register with 2.4 MB of redirect URIs", "127.0.0.2", "/register",
             [registration(n, large_uris()) for n in range(2)], "application/json"),
            ("5 POST /register of confidential clients", "127.0.0.3", "/register",
             [registration(n, method="client_secret_basic") for n in range(5)], "application/json"),
            ("12 revocations with a wrong client secret", "127.0.0.4", "/oauth/revoke_token/", [revoke] * 12,
             form))
    for label, source, path, bodies_, content_type in runs:
        got = await sequence(served, source, path, bodies_, content_type)
        sent = "" if got["n"] == got["of"] else f" (only {got['n']} sent within {served.cap * 4:.0f} s)"
        rows += [(item, f"{label}: answers", status_counts(got["statuses"]) + sent),
                 (item, f"{label}: server CPU per request", f"{got['cpu'] * 1000:,.0f} ms"),
                 (item, f"{label}: wall time per request", f"{got['wall'] * 1000:,.0f} ms"),
                 (item, f"{label}: bytes stored per request", f"{got['stored']:,.0f} B")]
    return rows


# ----------------------------------------------------------------------------- 10: metadata documents

def document(url: str, pad: int = 0) -> bytes:
    body = json.dumps({"client_id": url, "client_name": "Bench assistant",
                       "redirect_uris": [f"https://{urllib.parse.urlsplit(url).hostname}/callback"],
                       "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                       "token_endpoint_auth_method": "none"})
    return (body + " " * max(0, pad - len(body))).encode()


class TlsHost:
    """A client's web server on loopback: answers each document request at once, or drips the
    body a byte every `drip` seconds; notes how long each connection was held, and by whom closed."""

    def __init__(self, cert: tuple[Path, Path], name: str, drip: float = 0.0, pad: int = 0) -> None:
        self.context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.context.load_cert_chain(*map(str, cert))
        self.name, self.drip, self.pad = name, drip, pad
        self.listener = socket.create_server((HOSTS[name], 0))
        self.port = self.listener.getsockname()[1]
        self.holds: list[dict[str, Any]] = []
        self.stopped = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def url(self, path: str) -> str:
        return f"https://{self.name}:{self.port}{path}"

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self._sockets.append(conn)
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        hold = {"start": time.monotonic(), "end": None, "by_server": False}
        self.holds.append(hold)
        try:
            conn.settimeout(30)
            tls = self.context.wrap_socket(conn, server_side=True)
            request = b""
            while b"\r\n\r\n" not in request:
                request += tls.recv(4096) or b"\r\n\r\n"
            body = document(self.url(request.split()[1].decode()), self.pad)
            tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n" % len(body))
            hold["by_server"] = self._send(tls, body)
        except (OSError, ssl.SSLError, IndexError):
            hold["by_server"] = not self.stopped.is_set()
        finally:
            hold["end"] = time.monotonic()
            conn.close()

    def _send(self, tls: ssl.SSLSocket, body: bytes) -> bool:
        """Send the body (dripped or not); True when the registry closed the connection first."""
        if not self.drip:
            tls.sendall(body)
            return False
        for index in range(len(body)):
            if self.stopped.is_set():
                return False
            readable, _, _ = select.select([tls], [], [], self.drip)
            if readable and not tls.recv(1):
                return True
            tls.sendall(body[index:index + 1])
        return False

    def stop(self) -> None:
        self.stopped.set()
        self.listener.close()
        for conn in self._sockets:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)


async def admin_session(served: Served) -> dict[str, str]:
    page = await http(served.port, "GET", "/admin/login/")
    found = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page.body)
    if found is None:
        raise RuntimeError(f"no sign-in form: HTTP {page.status}")
    token = found.group(1).decode()
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": "bench", "password": PASSWORD,
                                   "next": "/admin/"}).encode()
    cookies = dict(page.cookies)
    reply = await http(served.port, "POST", "/admin/login/", body=form, headers={
        "Content-Type": "application/x-www-form-urlencoded", "Referer": f"http://127.0.0.1:{served.port}/admin/login/",
        "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())})
    if reply.status != 302:
        raise RuntimeError(f"admin login failed: HTTP {reply.status}")
    return {**cookies, **reply.cookies}


async def sign_in(served: Served, cookies: dict[str, str], client_id: str) -> Reply:
    """A signed-in user opens a client's authorization page (the consent page when all is well)."""
    verifier = base64.urlsafe_b64encode(os.urandom(40)).rstrip(b"=")
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest()).rstrip(b"=").decode()
    query = urllib.parse.urlencode({
        "response_type": "code", "client_id": client_id, "state": "st4te", "scope": "mcp",
        "redirect_uri": f"https://{urllib.parse.urlsplit(client_id).hostname}/callback",
        "resource": f"http://127.0.0.1:{served.port}/mcp", "code_challenge": challenge,
        "code_challenge_method": "S256"})
    return await http(served.port, "GET", f"/oauth/authorize/?{query}", timeout=served.cap,
                      headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())})


async def token_request(served: Served, client_id: str) -> float | None:
    """An anonymous token request naming `client_id` (its document is fetched); seconds to its
    answer, None past the cap."""
    form = urllib.parse.urlencode({"grant_type": "authorization_code", "code": "x", "client_id": client_id,
                                   "redirect_uri": f"https://{DRIP}/callback",
                                   "code_verifier": "v" * 43}).encode()
    try:
        reply = await http(served.port, "POST", "/oauth/token/", body=form, timeout=served.cap,
                           headers={"Content-Type": "application/x-www-form-urlencoded"})
    except TimeoutError:
        return None
    return reply.seconds


def outcome(reply: Reply) -> str:
    shown = reply.status == 200 and b"Bench assistant" in reply.body
    return f"{'consent page' if shown else 'refused'}, HTTP {reply.status}, {reply.seconds:.2f} s"


def held(host: TlsHost, cap: float) -> str:
    ended = [h["end"] - h["start"] for h in host.holds if h["by_server"]]
    still = sum(1 for h in host.holds if h["end"] is None)
    longest = f"{max(ended):.1f} s" if ended else ""
    if still:
        others = f", others {longest}" if ended else ""
        return f"> {cap:.0f} s ({still} of {len(host.holds)} still held){others}"
    return f"{longest} (longest of {len(ended)})"


async def metadata_documents(served: Served) -> list[Row]:
    item = "10 metadata documents"
    if not served.cimd:
        return [(item, "skipped", "the tree has no client metadata documents (OAUTH2_PROVIDER CIMD_ENABLED)")]
    cookies = await admin_session(served)
    cert = (served.folder / "cert.pem", served.folder / "key.pem")
    drip, shared, good = TlsHost(cert, DRIP, drip=2.0, pad=200), TlsHost(cert, SHARED), TlsHost(cert, GOOD)
    try:
        started = time.monotonic()
        fetches = [asyncio.create_task(token_request(served, drip.url(f"/client-{n}.json")))
                   for n in range(10)]
        while len(drip.holds) < 10 and time.monotonic() - started < 2:
            await asyncio.sleep(0.05)
        await asyncio.sleep(0.3)
        elsewhere = await sign_in(served, cookies, good.url("/client.json"))
        beside = await sign_in(served, cookies, shared.url("/client.json"))
        answered = [t for t in await asyncio.gather(*fetches) if t is not None]
        hold = held(drip, served.cap)
        drip.stop()
        await asyncio.sleep(5)  # the registry's fetches see the host gone and end
        again = await sign_in(served, cookies, shared.url("/client.json"))
    finally:
        for host in (drip, shared, good):
            host.stop()
    slowest = f", slowest {max(answered):.1f} s" if answered else ""
    rows = [(item, "10 token requests naming dripped documents: answered within the cap",
             f"{len(answered)} of 10{slowest}"),
            (item, "connections the dripping host got", str(len(drip.holds))),
            (item, "how long the registry held a dripping fetch", hold),
            (item, "a valid client's sign-in meanwhile, its document on another address", outcome(elsewhere)),
            (item, "a valid client's sign-in meanwhile, its document on the dripping host's address",
             outcome(beside)),
            (item, "that client's sign-in again, 5 s after the drip ended", outcome(again))]
    await settle(served)
    return rows


# ----------------------------------------------------------------------------- 11: batches

async def batch_session(served: Served) -> str | None:
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": BATCHES, "capabilities": {},
                       "clientInfo": {"name": "bench", "version": "1"}}}
    reply = await http(served.port, "POST", "/mcp", body=json.dumps(init).encode(),
                       headers={"Content-Type": "application/json", "Accept": ACCEPT})
    if message(reply).get("result", {}).get("protocolVersion") != BATCHES:
        return None
    sid = reply.headers["mcp-session-id"]
    await http(served.port, "POST", "/mcp", body=b'{"jsonrpc": "2.0", "method": "notifications/initialized"}',
               headers={"Content-Type": "application/json", "Accept": ACCEPT, "Mcp-Session-Id": sid,
                        "MCP-Protocol-Version": BATCHES})
    return sid


def one_mb_of_lists() -> list[dict[str, Any]]:
    one = len(json.dumps({"jsonrpc": "2.0", "id": 99999, "method": "prompts/list"})) + 2
    return [{"jsonrpc": "2.0", "id": n, "method": "prompts/list"} for n in range(1_000_000 // one)]


def answers(reply: Reply) -> str:
    try:
        sent = message(reply)
    except ValueError:
        return f"HTTP {reply.status}, {len(reply.body):,} bytes"
    if isinstance(sent, dict):
        return f"HTTP {reply.status}, one error: {sent.get('error', {}).get('message', '')[:100]}"
    results = sum("result" in m for m in sent)
    return f"HTTP {reply.status}, {results:,} results, {len(sent) - results:,} errors"


async def batches(served: Served) -> list[Row]:
    item = "11 batches"
    sid = await batch_session(served)
    if sid is None:
        return [(item, "skipped", f"the tree does not negotiate {BATCHES}, the revision with batches")]
    reads = [{"jsonrpc": "2.0", "id": n, "method": "resources/read", "params": {"uri": "docs://big-document"}}
             for n in range(100)]
    lists = one_mb_of_lists()
    rows: list[Row] = []
    for label, batch, when in ((f"1 MB batch ({len(lists):,} x prompts/list)", lists, "fresh server"),
                               ("100 reads of a 100 KB resource", reads, "after the batch above")):
        body = json.dumps(batch).encode()
        async with Watch(served) as watch:
            reply = await http(served.port, "POST", "/mcp", body=body, timeout=served.cap * 4, headers={
                "Content-Type": "application/json", "Accept": ACCEPT, "Mcp-Session-Id": sid,
                "MCP-Protocol-Version": BATCHES})
        rows += [(item, f"{label}: answer", answers(reply)),
                 (item, f"{label}: response size", f"{size(len(reply.body))} ({size(len(body))} sent)"),
                 (item, f"{label}: time", f"{reply.seconds:.2f} s"),
                 (item, f"{label}: server RSS growth (peak, {when})", watch.growth()),
                 (item, f"{label}: another client's worst latency", watch.worst())]
        await settle(served)
    return rows


# ----------------------------------------------------------------------------- 12: slow heads

async def half_head(port: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter, float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
    return reader, writer, time.monotonic()


async def closed_after(reader: asyncio.StreamReader, opened: float,
                       until: float) -> tuple[float | None, bytes]:
    """Seconds from opening until the server closed the connection (None: still open at `until`)."""
    try:
        data = await asyncio.wait_for(reader.read(), until - time.monotonic())
    except (TimeoutError, ValueError):
        return None, b""
    except OSError:
        data = b""
    return time.monotonic() - opened, data


async def slow_heads(served: Served) -> list[Row]:
    item, count = "12 slow heads", 300
    connections = [await half_head(served.port) for _ in range(count)]
    until = connections[0][2] + served.cap
    async with Watch(served) as watch:
        ends = await asyncio.gather(*(closed_after(reader, opened, until)
                                      for reader, _, opened in connections))
    for _, writer, _ in connections:
        writer.close()
    closed = [t for t, _ in ends if t is not None]
    said = {data.split(b"\r\n", 1)[0].decode("latin-1") or "nothing" for t, data in ends if t is not None}
    when = (f", {min(closed):.1f}-{max(closed):.1f} s after opening, answered: {', '.join(sorted(said))}"
            if closed else "")
    rows = [(item, f"{count} half-sent heads: closed by the server within {served.cap:.0f} s",
             f"{len(closed)} of {count}{when}"),
            (item, "another client's prompts/list meanwhile: worst", watch.worst())]
    await settle(served)
    return rows


# ----------------------------------------------------------------------------- the run

# Batches first: RSS growth is measured on a fresh server (memory freed after earlier scenarios is reused).
SCENARIOS: dict[str, Callable[[Served], Awaitable[list[Row]]]] = {
    "11": batches, "7": patterns, "8": bodies, "9": registrations, "10": metadata_documents, "12": slow_heads}


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


async def scenarios(served: Served, only: set[str]) -> list[Row]:
    rows: list[Row] = [("-", "load average (1, 5, 15 min) at start", load())]
    for number, scenario in SCENARIOS.items():
        if only and number not in only:
            continue
        print(f"  {number}: {scenario.__name__} (load {load()})", file=sys.stderr, flush=True)
        try:
            rows += await asyncio.wait_for(scenario(served), served.cap * 20)
        except TimeoutError:
            rows.append((number, "did not finish", f"> {served.cap * 20:.0f} s"))
            await settle(served)
    rows.append(("-", "load average (1, 5, 15 min) at end", load()))
    return rows


def measure(tree: Path, cap: float, only: set[str]) -> list[Row]:
    folder = Path(tempfile.mkdtemp(prefix="avail-bench-"))
    try:
        cert, _ = certificate(folder)
        env = server_env(folder, cert)
        probe = prepare(tree, folder, env)
        port = free_port()
        proc = start_server(tree, env, port, folder / "daphne.log")
        try:
            served = Served(tree, folder, port, proc.pid, probe["client_id"], probe["cimd"], cap)
            return asyncio.run(scenarios(served, only))
        finally:
            stop_server(proc)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def item_order(key: tuple[str, str]) -> int:
    """Rows by item number; the load averages first and last."""
    item, measure_ = key
    return int(item.split()[0]) if item[0].isdigit() else (0 if "start" in measure_ else 99)


def table(columns: dict[str, list[Row]]) -> str:
    keys: list[tuple[str, str]] = []
    values: dict[tuple[str, str, str], str] = {}
    for name, rows in columns.items():
        for item, measure_, value in rows:
            if (item, measure_) not in keys:
                keys.append((item, measure_))
            values[(name, item, measure_)] = value
    lines = ["| item | measure | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for item, measure_ in sorted(keys, key=item_order):
        cells = " | ".join(values.get((name, item, measure_), "") for name in columns)
        lines.append(f"| {item} | {measure_} | {cells} |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", type=Path,
                    help="a checkout to serve (repeatable; default: this one)")
    ap.add_argument("--cap", type=float, default=30.0,
                    help="seconds after which slow old behaviour is cut off")
    ap.add_argument("--only", default="", help="comma-separated item numbers (7-12)")
    args = ap.parse_args()
    if len(os.sched_getaffinity(0)) > 1:
        os.sched_setaffinity(0, {1})  # the server runs on CPU 0
    only = {n for n in args.only.split(",") if n}
    columns: dict[str, list[Row]] = {}
    for tree in args.tree or [ROOT]:
        tree = tree.resolve()
        name = f"{commit_of(tree)} ({tree.name})"
        print(f"{name}: preparing", file=sys.stderr, flush=True)
        columns[name] = measure(tree, args.cap, only)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"availability-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(columns, indent=1))
    print(table(columns))
    print(f"\nraw: {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
