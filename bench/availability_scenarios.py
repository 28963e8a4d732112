"""The availability bench's scenarios, one per issue item (7: patterns, 8: bodies, 9:
registrations, 10: metadata documents, 11: batches, 12: slow heads), each bounded in time and
returning rows of (item, measure, value) for bench/availability.py's table."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import re
import select
import socket
import ssl
import statistics
import sys
import threading
import time
import urllib.parse
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from availability_common import (
    ACCEPT,
    BATCHES,
    DRIP,
    GOOD,
    HOSTS,
    MIB,
    PASSWORD,
    SHARED,
    Reply,
    Row,
    Served,
    Watch,
    cpu_seconds,
    http,
    mcp,
    message,
    request_head,
    seconds,
    settle,
    size,
    stored_bytes,
    summary,
    written,
)

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
