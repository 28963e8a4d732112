#!/usr/bin/env python3
"""A full listing over HTTP right after a real restart (cold) against the same walk once the
catalog is built (warm), on the server `make run` serves (daphne, one process), in one run.

bench/cold_listing.py times the cold path in process with the background build held back; this
one times what a client sees: daphne is started on a fresh process for each walk, so the whole
catalog's build (registry/serving/warmup.py) runs in its thread beside the walk, as it does after
every restart or deploy. Per repeat and list (prompts/list, resources/list):

- start daphne on the bench database (N prompts + N resources, `bench_load`), wait for its port;
- cold: walk every page (following nextCursor) over one keep-alive connection, each page timed;
- wait until the server is idle (its CPU time stops growing: the build is done), timed from the
  walk's start as `restart to built catalog`;
- cached: the same walk again (every page was answered before at this generation: result-cache
  hits, what a client's second walk costs), then stop the server;
- warm: on another fresh process, one first page (which starts the build), wait until idle, then
  the walk: every page made from the built catalog, nothing cached (what the cold walk should be
  compared with: the same work once the catalog is in memory).

The server is pinned to CPU 0 (taskset, as bench/run.py does); the client runs beside it
unpinned. Prints a Markdown table (medians over the repeats; the ratio is the median of each
repeat's cold/warm) with the conditions, and writes bench/results/restart-listing-<time>.json.

  .venv/bin/python bench/restart_listing.py [--size 20000] [--repeat 3] [--db /tmp/restart-listing.sqlite3]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from availability_common import cpu_seconds  # noqa: E402
from conditions import busy_processes, load_average, machine, today, versions  # noqa: E402
from run import free_port, pinned, wait_port  # noqa: E402

PY = str(ROOT / ".venv" / "bin" / "python")
LISTS = (("prompts/list", "prompts"), ("resources/list", "resources"))
VERSION = "2026-07-28"


def walk_first_page(port: int, method: str) -> None:
    walk(port, method, method.split("/")[0], pages=1)


def walk(port: int, method: str, field: str, pages: int | None = None) -> tuple[list[float], int]:
    """(seconds per page, entries) of one walk through every page of a list (or its first `pages`)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    spent: list[float] = []
    entries, cursor, rid = 0, None, 0
    while True:
        rid += 1
        params: dict[str, Any] = {"_meta": {"io.modelcontextprotocol/protocolVersion": VERSION,
                                            "io.modelcontextprotocol/clientCapabilities": {}}}
        if cursor:
            params["cursor"] = cursor
        body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        started = time.perf_counter()
        conn.request("POST", "/mcp", body, {"Content-Type": "application/json", "Mcp-Method": method,
                                            "Accept": "application/json, text/event-stream",
                                            "MCP-Protocol-Version": VERSION})
        response = conn.getresponse()
        raw = response.read()
        spent.append(time.perf_counter() - started)
        if response.status != 200:
            raise RuntimeError(f"{method}: HTTP {response.status}: {raw[:200]!r}")
        result = json.loads(raw)["result"]
        entries += len(result[field])
        cursor = result.get("nextCursor")
        if not cursor or len(spent) == pages:
            conn.close()
            return spent, entries


def wait_idle(pid: int, timeout: float = 120.0) -> float:
    """Seconds until the process used under 5% of a CPU over half a second (its build is done)."""
    started = time.perf_counter()
    last = cpu_seconds(pid)
    while time.perf_counter() - started < timeout:
        time.sleep(0.5)
        now = cpu_seconds(pid)
        if now - last < 0.025:
            return time.perf_counter() - started - 0.5
        last = now
    raise RuntimeError("the server did not go idle: is its build stuck?")


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def started_server(env: dict[str, str], log: Path) -> tuple[subprocess.Popen, int]:
    port = free_port()
    cmd = [PY, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"]
    server = subprocess.Popen(pinned(0, cmd), env=env, cwd=ROOT, stdout=log.open("a"), stderr=subprocess.STDOUT)
    wait_port(port)
    wait_idle(server.pid)  # start-up settled: the walk begins in a quiet process
    return server, port


def stopped(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(30)


def one_repeat(env: dict[str, str], method: str, field: str, log: Path) -> dict[str, Any]:
    """Cold and cached walks on one fresh process, the warm walk on another."""
    server, port = started_server(env, log)
    try:
        cold, entries = walk(port, method, field)
        build = sum(cold) + wait_idle(server.pid)
        cached, cached_entries = walk(port, method, field)  # every page answered before: a cache hit
    finally:
        stopped(server)
    server, port = started_server(env, log)
    try:
        walk_first_page(port, method)  # starts the build; nothing else of the list is asked meanwhile
        wait_idle(server.pid)
        warm, warm_entries = walk(port, method, field)
    finally:
        stopped(server)
    if not entries == cached_entries == warm_entries:
        raise RuntimeError(f"{method}: walks listed {entries}, {cached_entries}, {warm_entries} entries")
    return {"entries": entries, "pages": len(cold), "cold_s": sum(cold), "warm_s": sum(warm),
            "cached_s": sum(cached), "cold_p50_ms": percentile(cold, 0.5) * 1000,
            "cold_p99_ms": percentile(cold, 0.99) * 1000, "warm_p50_ms": percentile(warm, 0.5) * 1000,
            "build_s": build}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20000, help="N prompts + N resources")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--db", default="/tmp/restart-listing.sqlite3")
    parser.add_argument("--reuse", action="store_true", help="keep an existing --db (no reload)")
    args = parser.parse_args()
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{args.db}", MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789", DJANGO_SETTINGS_MODULE="config.settings")
    env.pop("REDIS_URL", None)
    if not (args.reuse and Path(args.db).exists()):
        for suffix in ("", "-wal", "-shm"):
            Path(args.db + suffix).unlink(missing_ok=True)
        subprocess.run([PY, "manage.py", "migrate", "--noinput", "-v", "0"], env=env, cwd=ROOT, check=True)
        subprocess.run([PY, "manage.py", "bench_load", "--prompts", str(args.size), "--resources", str(args.size),
                        "-v", "0"], env=env, cwd=ROOT, check=True)
    results_dir = ROOT / "bench" / "results"
    results_dir.mkdir(exist_ok=True)
    log = results_dir / "restart-listing-server.log"
    log.write_text("")
    before = load_average()
    runs: dict[str, list[dict[str, Any]]] = {method: [] for method, _ in LISTS}
    for _ in range(args.repeat):  # the lists in turn, each on a fresh process
        for method, field in LISTS:
            runs[method].append(one_repeat(env, method, field, log))
            print(method, json.dumps({k: round(v, 3) for k, v in runs[method][-1].items()}), flush=True)
    after = load_average()
    beside = [" ".join(name.split()[:1] + name.split()[-1:]) for name in busy_processes({os.getpid()})]
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    print(f"\n{args.size} prompts + {args.size} resources, SQLite, daphne restarted before each cold walk, "
          f"over HTTP (2026-07-28), medians of {args.repeat}; commit {commit}; {machine()}; load {before} -> "
          f"{after}; beside: {', '.join(beside) or 'nothing over 5%'}\n")
    print("| list | pages | cold walk s | cold page p50 / p99 ms | warm walk s | warm page p50 ms | cold/warm | "
          "cached walk s | cold/cached | restart to built catalog s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summary: dict[str, Any] = {}
    for method, rows in runs.items():
        def median(key: str, rows: list[dict[str, Any]] = rows) -> float:
            return statistics.median(row[key] for row in rows)

        ratio = statistics.median(row["cold_s"] / row["warm_s"] for row in rows)
        to_cached = statistics.median(row["cold_s"] / row["cached_s"] for row in rows)
        summary[method] = {key: median(key) for key in rows[0]} | {"cold_to_warm": ratio,
                                                                   "cold_to_cached": to_cached}
        print(f"| {method} | {rows[0]['pages']} | {median('cold_s'):.2f} | {median('cold_p50_ms'):.1f} / "
              f"{median('cold_p99_ms'):.1f} | {median('warm_s'):.2f} | {median('warm_p50_ms'):.1f} | "
              f"{ratio:.1f}x | {median('cached_s'):.2f} | {to_cached:.1f}x | {median('build_s'):.1f} |")
    out = results_dir / f"restart-listing-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.write_text(json.dumps({"conditions": {"date": today(), "commit": commit, "machine": machine(),
                                              "load_before": before, "load_after": after, "beside": beside,
                                              "versions": versions(), "size": args.size, "repeat": args.repeat},
                               "summary": summary, "runs": runs}, indent=1))
    print(f"\nwrote {out.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
