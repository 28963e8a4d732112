"""The availability bench's machinery: a throwaway server of a given checkout, its /proc figures,
a small HTTP client, and a watch on another client's latency and the server's RSS
(bench/availability.py runs the scenarios of bench/availability_scenarios.py with it)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import pinned, wait_port
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
