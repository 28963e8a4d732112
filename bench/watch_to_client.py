#!/usr/bin/env python3
"""A watched-folder edit to a listening client, end to end: file write -> MCP notification.

1. `bench_load --prompts N --resources N` into SQLite and `registry_export` of it, split into a
   40-file folder (part-NN.yaml) with every resource's body as a `file:` side file (in a docs
   sub-folder, named after the resource's URI: .md for text, .bin for bytes); prompts' messages
   stay in the YAML (the format has no side file for a text message). The folder is imported once with --publish.
2. A real server as `make run` starts it (daphne, config.asgi:application), and the watcher as an
   operator runs it, in its own process on the same database:
   `manage.py registry_import FOLDER --watch --publish --note ...`.
3. Listening clients: a 2026-07-28 `subscriptions/listen` stream (prompts list_changed, and
   the edited resources' URIs) and a 2025-11-25 session GET stream subscribed to them
   (resources/subscribe).
4. E edits, --gap s apart, alternating: a resource's side file (its bytes change), then a
   prompt's text in its YAML file. Timed from the write (wall clock) to the first
   `notifications/resources/updated` for that URI, or `notifications/prompts/list_changed`, on
   each stream.

Breakdown per edit: write -> the change-log row (`created_at`, written inside the round's
transaction when its kind is written: resources before prompts, so a resource's row comes before
the prompts' digest compare), write -> the watcher's log line (printed once the round committed:
watchfiles' batching, QUIET_MS, and the round), and log line -> notification (how the server
learns of another process's commit: the channel layer when REDIS_URL is set, else the change-log
catch-up every CHANGE_POLL_SECONDS; then the hub's catalog work and the frame). --redis URL runs
the same with channels_redis on both processes. --baseline runs the embedded case once more with
the watcher of a baseline checkout (default: a detached `git worktree` of `main`, removed
afterwards), the same run's comparison.

Nothing else should run beside it; the load average is reported with the figures.
Usage: .venv/bin/python bench/watch_to_client.py [--n 5000] [--edits 10] [--gap 2] [--redis URL]
       [--baseline [PATH]]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from conditions import load_average, machine, today, versions
from reimport import script
from run import free_port, wait_port

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PARTS = 40
UPDATED = "notifications/resources/updated"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"

SPLIT = r"""
import base64, json, sys
from pathlib import Path
from registry.portable.dump import dump_document
from registry.portable.parse import load_file
data = load_file(sys.argv[-2]).data
out = Path(sys.argv[-1]); (out / "docs").mkdir(parents=True)
parts = int(sys.argv[-3])
for resource in data.get("resources", []):
    name = resource["uri"].split("://", 1)[1].replace("/", "_")
    if resource.get("text") is not None:
        (out / "docs" / f"{name}.md").write_text(resource.pop("text"), encoding="utf-8")
        resource["file"] = f"docs/{name}.md"
    elif resource.get("base64") is not None:
        (out / "docs" / f"{name}.bin").write_bytes(base64.b64decode(resource.pop("base64")))
        resource["file"] = f"docs/{name}.bin"
where = {}
for i in range(parts):
    doc = {section: items[i::parts] for section, items in data.items() if items[i::parts]}
    (out / f"part-{i:02d}.yaml").write_text(dump_document(doc))
    for item in doc.get("prompts", []):
        where[item["name"]] = f"part-{i:02d}.yaml"
print(json.dumps(where))
"""


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"manage.py {' '.join(args[:2])} failed:\n{done.stderr[-3000:]}")
    return done.stdout


class Stream:
    """One SSE response read in the background; every JSON-RPC message with its receipt time."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.messages: list[tuple[float, dict[str, Any]]] = []
        self.arrived = asyncio.Event()
        self.task: asyncio.Task | None = None

    @classmethod
    async def open(cls, port: int, method: str, headers: dict[str, str], body: Any = None) -> Stream:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        data = json.dumps(body).encode() if body is not None else b""
        head = {"Host": f"127.0.0.1:{port}", "Accept": "application/json, text/event-stream", **headers}
        if body is not None:
            head.update({"Content-Type": "application/json", "Content-Length": str(len(data))})
        writer.write(f"{method} /mcp HTTP/1.1\r\n".encode() + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode()
                     + b"\r\n" + data)
        status = (await reader.readline()).split()[1]
        chunked = False
        while (line := await reader.readline()) not in (b"\r\n", b""):
            chunked |= line.lower().startswith(b"transfer-encoding:") and b"chunked" in line.lower()
        if status != b"200":
            raise RuntimeError(f"{method} stream refused: {status!r}")
        stream = cls(reader, writer)
        stream.task = asyncio.get_running_loop().create_task(stream._read(chunked))
        return stream

    async def _read(self, chunked: bool) -> None:
        text = b""
        while True:
            if chunked:
                size = int((await self.reader.readline()).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    return
                piece = await self.reader.readexactly(size + 2)
                piece = piece[:-2]
            else:
                piece = await self.reader.read(65536)
                if not piece:
                    return
            now = time.time()
            text += piece.replace(b"\r\n", b"\n")
            *events, text = text.split(b"\n\n")
            for event in events:
                data = b"".join(line[5:].strip() for line in event.split(b"\n") if line.startswith(b"data:"))
                if data:
                    self.messages.append((now, json.loads(data)))
                    self.arrived.set()

    async def first_after(self, since: float, method: str, uri: str | None, timeout: float) -> float | None:
        """Receipt time of the first `method` (for `uri`) received after `since`, or None."""
        deadline = time.monotonic() + timeout
        while True:
            for at, message in self.messages:
                if at >= since and message.get("method") == method and (
                        uri is None or message.get("params", {}).get("uri") == uri):
                    return at
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), left)
            except TimeoutError:
                return None

    def close(self) -> None:
        if self.task is not None:
            self.task.cancel()
        self.writer.close()


async def post(port: int, headers: dict[str, str], body: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """One JSON-RPC POST; the response headers and its one message (JSON or a one-event SSE body)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode()
    head = {"Host": f"127.0.0.1:{port}", "Accept": "application/json, text/event-stream", "Connection": "close",
            "Content-Type": "application/json", "Content-Length": str(len(data)), **headers}
    writer.write(b"POST /mcp HTTP/1.1\r\n" + "".join(f"{k}: {v}\r\n" for k, v in head.items()).encode()
                 + b"\r\n" + data)
    raw = await reader.read()
    writer.close()
    top, _, rest = raw.partition(b"\r\n\r\n")
    found = dict(line.split(": ", 1) for line in top.decode().split("\r\n")[1:])
    found = {k.lower(): v for k, v in found.items()}
    if found.get("transfer-encoding", "").lower() == "chunked":
        body_bytes, rest = b"", rest
        while rest:
            size_text, _, rest = rest.partition(b"\r\n")
            size = int(size_text or b"0", 16)
            if size == 0:
                break
            body_bytes, rest = body_bytes + rest[:size], rest[size + 2:]
        rest = body_bytes
    text = rest.decode()
    if "data:" in text:
        text = "".join(line[5:].strip() for line in text.splitlines() if line.startswith("data:"))
    return found, (json.loads(text) if text.strip() else {})


async def open_legacy(port: int, uris: list[str]) -> Stream:
    """A 2025-11-25 session subscribed to `uris`, and its GET stream."""
    headers, _reply = await post(port, {}, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}})
    session = {"Mcp-Session-Id": headers["mcp-session-id"], "MCP-Protocol-Version": LEGACY}
    await post(port, session, {"jsonrpc": "2.0", "method": "notifications/initialized"})
    for i, uri in enumerate(uris):
        _h, reply = await post(port, session, {"jsonrpc": "2.0", "id": 2 + i, "method": "resources/subscribe",
                                               "params": {"uri": uri}})
        if "error" in reply:
            raise RuntimeError(f"resources/subscribe {uri}: {reply}")
    return await Stream.open(port, "GET", {**session, "Accept": "text/event-stream"})


async def open_listen(port: int, uris: list[str]) -> Stream:
    """A 2026-07-28 `subscriptions/listen` stream: prompts and resources lists, and `uris`."""
    stream = await Stream.open(port, "POST", {"MCP-Protocol-Version": MODERN, "Mcp-Method": "subscriptions/listen"}, {
        "jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
            "notifications": {"promptsListChanged": True, "resourcesListChanged": True,
                              "resourceSubscriptions": uris},
            "_meta": {"io.modelcontextprotocol/protocolVersion": MODERN,
                      "io.modelcontextprotocol/clientCapabilities": {}}}})
    if await stream.first_after(0, "notifications/subscriptions/acknowledged", None, 30) is None:
        raise RuntimeError("the listen stream was not acknowledged")
    return stream


class WatcherLog:
    """The watcher's stdout, each line with the time it arrived."""

    def __init__(self, proc: subprocess.Popen) -> None:
        self.lines: list[tuple[float, str]] = []
        self.thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self.thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            self.lines.append((time.time(), line.rstrip("\n")))

    def first_after(self, since: float, text: str, timeout: float = 120.0) -> float | None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for at, line in list(self.lines):
                if at >= since and text in line:
                    return at
            time.sleep(0.02)
        return None


def commits_after(env: dict[str, str], after: float) -> list[float]:
    """created_at (epoch) of every change-log row written after `after` (the rounds' changes)."""
    code = ("import json; from datetime import datetime, timezone; from registry.models import ChangeLogEntry as C; "
            f"since = datetime.fromtimestamp({after}, tz=timezone.utc); "
            "rows = C.objects.filter(created_at__gt=since).order_by('id'); "
            "print(json.dumps([r.created_at.timestamp() for r in rows]))")
    return json.loads(manage(env, "shell", "-v", "0", "-c", code).strip().splitlines()[-1])


def edit_resource(folder: Path, index: int, n: int) -> tuple[str, Path]:
    name = f"doc-{(index * 97) % n:05d}"
    side = folder / "docs" / f"{name}.md"
    side.write_text(side.read_text(encoding="utf-8") + f"\nEdited at {time.time_ns()}.\n", encoding="utf-8")
    return f"docs://{name}", side


def edit_prompt(folder: Path, where: dict[str, str], index: int, n: int) -> Path:
    name = f"prompt-{(index * 89) % n:05d}"
    part = folder / where[name]
    text = part.read_text(encoding="utf-8")
    marker = f"[{name}] "
    assert marker in text, name
    part.write_text(text.replace(marker, f"{marker}(edit {time.time_ns()}) ", 1), encoding="utf-8")
    return part


async def edits(args: argparse.Namespace, env: dict[str, str], folder: Path, where: dict[str, str],
                port: int, log: WatcherLog) -> list[dict[str, Any]]:
    uris = [f"docs://doc-{(i * 97) % args.n:05d}" for i in range(args.edits)]
    streams = {"listen": await open_listen(port, uris), "session": await open_legacy(port, uris)}
    await asyncio.sleep(1.0)
    rows: list[dict[str, Any]] = []
    try:
        for i in range(args.edits):
            kind = "resource" if i % 2 == 0 else "prompt"
            load = round(os.getloadavg()[0], 2)
            written = time.time()
            if kind == "resource":
                uri, _path = edit_resource(folder, i, args.n)
                waits = {name: s.first_after(written, UPDATED, uri, 30) for name, s in streams.items()}
            else:
                edit_prompt(folder, where, i, args.n)
                waits = {name: s.first_after(written, PROMPTS_CHANGED, None, 30) for name, s in streams.items()}
            got = dict(zip(waits, await asyncio.gather(*waits.values()), strict=True))
            logged = await asyncio.to_thread(log.first_after, written, "file(s) changed")
            rows.append({"edit": i + 1, "kind": kind, "written": written, "load": load, "logged": logged,
                         **{f"{name}_at": at for name, at in got.items()}})
            await asyncio.sleep(args.gap)
    finally:
        for stream in streams.values():
            stream.close()
    commits = commits_after(env, rows[0]["written"] if rows else time.time())
    for row in rows:
        mine = [c for c in commits if c >= row["written"]]
        row["commit"] = mine[0] if mine else None
    return rows


def ms(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else round((b - a) * 1000)


def report(rows: list[dict[str, Any]], args: argparse.Namespace, title: str) -> list[str]:
    """Per edit: write -> change row -> watcher's log line (the round committed) -> each stream."""
    out = [f"\n## {title}\n",
           "| edit | kind | write -> change row ms | write -> watcher log ms | log -> listen ms | "
           "log -> session ms | write -> listen ms | write -> session ms | load |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['edit']} | {r['kind']} | {ms(r['written'], r['commit'])} | {ms(r['written'], r['logged'])} | "
                   f"{ms(r['logged'], r['listen_at'])} | {ms(r['logged'], r['session_at'])} | "
                   f"{ms(r['written'], r['listen_at'])} | {ms(r['written'], r['session_at'])} | {r['load']} |")

    def p50_max(values: list[float | None]) -> str:
        got = [v for v in values if v is not None]
        return f"p50 {statistics.median(got):.0f} ms, max {max(got):.0f} ms" if got else "none"

    committed = [ms(r["written"], r["logged"]) for r in rows]
    out.append(f"\nwrite -> watcher log (the round committed): {p50_max(committed)}")
    for name in ("listen", "session"):
        missing = sum(1 for r in rows if r[f"{name}_at"] is None)
        out.append(f"{name}: write -> notification {p50_max([ms(r['written'], r[f'{name}_at']) for r in rows])} "
                   f"({len(rows) - missing} edits, {missing} not notified within 30 s); watcher log -> notification "
                   f"{p50_max([ms(r['logged'], r[f'{name}_at']) for r in rows])}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5000, help="N prompts + N resources")
    ap.add_argument("--edits", type=int, default=10)
    ap.add_argument("--gap", type=float, default=2.0, help="seconds between one edit's notification and the next edit")
    ap.add_argument("--redis", default="", help="also run with channels_redis at this URL (redis://127.0.0.1:6379/9)")
    ap.add_argument("--baseline", nargs="?", const="main", default="",
                    help="also time the watcher of this checkout PATH (default: a worktree of main)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-watch-to-client-"))
    env = dict(os.environ, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789",
               MEDIA_ROOT=str(tmp / "media"), REGISTRY_MAX_IMPORT_BYTES=str(512 * 1024 * 1024),
               DATABASE_URL=f"sqlite:///{tmp / 'watch.sqlite3'}", MCP_ALLOW_ANONYMOUS="1",
               ALLOWED_HOSTS="127.0.0.1,localhost", PYTHONUNBUFFERED="1")
    env.pop("REDIS_URL", None)
    lines = [f"conditions: {machine()}; {today()}; {versions()}; load before {load_average()}"]
    procs: list[subprocess.Popen] = []
    baseline = Path(args.baseline) if args.baseline and args.baseline != "main" else None
    if args.baseline == "main":
        baseline = tmp / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(baseline), "main"], cwd=ROOT, check=True,
                       capture_output=True)
    try:
        manage(env, "migrate", "--noinput")
        manage(env, "bench_load", "--prompts", str(args.n), "--resources", str(args.n))
        export = tmp / "export.yaml"
        manage(env, "registry_export", str(export))
        folder = tmp / "watched"
        where = json.loads(script(ROOT, env, SPLIT, str(PARTS), str(export), str(folder)).strip().splitlines()[-1])
        started = time.perf_counter()
        manage(env, "registry_import", str(folder), "--publish", "--note", "bench: the folder")
        lines.append(f"first import of the {PARTS}-file folder: {time.perf_counter() - started:.1f} s")
        modes = [("embedded channel layer: change-log catch-up", {}, ROOT)]
        if baseline is not None:
            modes.append(("embedded channel layer, the BASELINE watcher", {}, baseline))
        if args.redis:
            modes.append(("channels_redis on both processes", {"REDIS_URL": args.redis}, ROOT))
        for title, extra, code in modes:
            mode_env = dict(env, **extra)
            port = free_port()
            server = subprocess.Popen([PY, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(port),
                                       "config.asgi:application"], cwd=ROOT, env=mode_env,
                                      stdout=(tmp / "daphne.log").open("a"), stderr=subprocess.STDOUT)
            procs.append(server)
            wait_port(port)
            watcher = subprocess.Popen([PY, "manage.py", "registry_import", str(folder), "--watch", "--publish",
                                        "--note", "bench: watched"], cwd=code, env=mode_env, text=True,
                                       stdout=subprocess.PIPE, stderr=(tmp / "watcher.err").open("a"))
            procs.append(watcher)
            log = WatcherLog(watcher)
            if log.first_after(0, "initial import", timeout=600) is None:
                sys.exit(f"the watcher never finished its first import: {(tmp / 'watcher.err').read_text()[-3000:]}")
            rows = asyncio.run(edits(args, mode_env, folder, where, port, log))
            for proc in (watcher, server):
                proc.terminate()
                proc.wait(30)
            table = report(rows, args, f"{title}: {args.n} prompts + {args.n} resources, {PARTS} files")
            lines += table
            print("\n".join(table), flush=True)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        if args.baseline == "main" and baseline is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    lines.append(f"\nload after {load_average()}")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
