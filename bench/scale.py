#!/usr/bin/env python3
"""Scale: a worker's memory and first-request time by registry size, and large blobs.

For each size (default 1k+1k and 20k+20k, `manage.py bench_load --prompts N --resources N`):
start one daphne worker, time the FIRST `prompts/list` after start (the catalog load), warm it
up (every list page once, 200 reads), then read RSS from /proc. With --blobs B (needs
`bench_load --blobs`): B resources of 4 MiB each, the database file size, and the p50 of reading
one through the MCP endpoint. Everything is measured from outside (HTTP + /proc + file sizes),
so the script works whatever the server keeps in memory or where content is stored.

  .venv/bin/python bench/scale.py [--sizes 1000,20000] [--blobs 50]

Writes JSON lines and a Markdown summary to bench/results/.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, pinned, wait_port
from soak import rss_mib
from writes import manage

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def call(conn: http.client.HTTPConnection, method: str, params: dict) -> tuple[dict, float]:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": {**params, "_meta": META}})
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
    if "name" in params or "uri" in params:
        headers["Mcp-Name"] = params.get("name") or params.get("uri")
    started = time.perf_counter()
    conn.request("POST", "/mcp", body=body, headers=headers)
    response = conn.getresponse()
    data = response.read()
    elapsed = (time.perf_counter() - started) * 1000
    if response.status != 200:
        raise RuntimeError(f"{method}: HTTP {response.status} {data[:300]!r}")
    reply = json.loads(data.split(b"data: ", 1)[1] if data.startswith(b"event:") else data)
    if "error" in reply:
        raise RuntimeError(f"{method}: {reply['error']}")
    return reply["result"], elapsed


def db_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


def measure(size: int, blobs: int, tmp: Path, base_env: dict[str, str]) -> dict:
    db = tmp / f"scale-{size}.sqlite3"
    env = dict(base_env, DATABASE_URL=f"sqlite:///{db}")
    manage(env, "migrate", "--noinput")
    extra = ("--blobs", str(blobs)) if blobs else ()
    started = time.perf_counter()
    manage(env, "bench_load", "--prompts", str(size), "--resources", str(size), *extra, timeout=3600)
    load_s = time.perf_counter() - started
    port = free_port()
    server = subprocess.Popen(pinned(0, [PY, "-m", "daphne", "-v", "0", "-e",
                                         f"tcp:port={port}:interface=127.0.0.1", "config.asgi:application"]),
                              env=env, cwd=ROOT, stdout=(tmp / f"daphne-{size}.log").open("w"),
                              stderr=subprocess.STDOUT)
    row: dict = {"bench": "scale", "prompts": size, "resources": size, "blobs": blobs, "load_s": round(load_s, 1),
                 "db_mib": round(db_bytes(db) / 2**20, 1)}
    try:
        wait_port(port)
        row["rss_idle_mib"] = round(rss_mib(server.pid), 1)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        _, row["first_request_ms"] = call(conn, "prompts/list", {})
        row["first_request_ms"] = round(row["first_request_ms"], 1)
        for method in ("prompts/list", "resources/list"):
            cursor = None
            while True:
                result, _ = call(conn, method, {"cursor": cursor} if cursor else {})
                cursor = result.get("nextCursor")
                if not cursor:
                    break
        for i in range(200):
            call(conn, "resources/read", {"uri": f"docs://doc-{i % size:05d}"})
        row["rss_warm_mib"] = round(rss_mib(server.pid), 1)
        if blobs:
            times = []
            for i in range(min(blobs, 50)):
                result, ms = call(conn, "resources/read", {"uri": f"docs://big-{i:05d}"})
                if not result["contents"][0].get("blob"):
                    raise RuntimeError("a blob read returned no blob")
                times.append(ms)
            row["blob_read_p50_ms"] = round(statistics.median(times), 1)
            row["rss_after_blobs_mib"] = round(rss_mib(server.pid), 1)
    finally:
        server.terminate()
        server.wait(10)
    print(json.dumps(row), flush=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,20000")
    ap.add_argument("--blobs", type=int, default=0, help="4 MiB blob resources to add to the smallest size")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-scale-"))
    base_env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
                    DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789")
    base_env.pop("REDIS_URL", None)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    rows = []
    try:
        for i, size in enumerate(sizes):
            rows.append(measure(size, args.blobs if i == 0 else 0, tmp, base_env))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"scale-{stamp}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = ["| prompts+resources | blobs | DB MiB | RSS idle | first request ms | RSS warm | blob read p50 ms |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['prompts']}+{r['resources']} | {r['blobs']} | {r['db_mib']} | {r.get('rss_idle_mib')} | "
              f"{r.get('first_request_ms')} | {r.get('rss_warm_mib')} | {r.get('blob_read_p50_ms', '')} |"
              for r in rows]
    text = f"# Scale, {time.strftime('%Y-%m-%d %H:%M')}\n\n" + "\n".join(lines) + "\n"
    (out / f"scale-{stamp}.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
