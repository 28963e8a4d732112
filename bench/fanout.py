#!/usr/bin/env python3
"""Fan-out to many listeners on one worker, and what it costs another client of that worker.

For each N (default 1,000 and 5,000 `subscriptions/listen` streams, held by bench/listeners.py
in another process) on one daphne worker (SQLite, 1k + 1k entries):

  0. quiet: docs://doc-00001 published through the REST API every --gap seconds, nothing else
     running: change written -> first / LAST of the N listeners per publish, and the hub's own
     time per delivery (its "queued for N listeners in X ms" log line: refresh, judging and
     writing every frame; on daphne the frames are written to the sockets within it), and the
     worker's CPU time (user + system, /proc) per publish, request included: the figure least
     stretched by other work on a shared machine;
  1. baseline: another client loops `prompts/get` (2026-07-28, one keep-alive connection, closed
     loop) for --seconds with the N streams open and nothing published: its p50 / p99 / max
     latency and requests per second;
  2. fan-out: the same client for the same time while docs://doc-00001 is published through the
     REST API every --gap seconds (default 2 s) and notified to all N: its latency again, and
     change written -> first / LAST of the N listeners per publish.

With --old PATH the same is run, N by N, on the checkout at PATH (e.g. `git worktree add
--detach /tmp/fanout-old main`) beside this one, in the same run and on the same database, so
the two codes are compared side by side. The server runs on CPU 0; the listeners, the probing
client and the publisher share CPU 1 (a 2-core machine), so the client's own figures include
the listeners' receive work during a fan-out. Nothing here is asserted; it reports.

  .venv/bin/python bench/fanout.py [--sizes 1000,5000] [--seconds 20] [--gap 2] [--old /tmp/fanout-old]

Writes bench/results/fanout-<time>.{json,md}.
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
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notify import PER_ADDRESS, matched, raise_open_files, stop
from run import free_port, pinned, wait_port
from writes import PASSWORD, PY, Listeners, Publisher, commit_times, percentile, prepare

ROOT = Path(__file__).resolve().parent.parent
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def worker(root: Path, env: dict[str, str], port: int, log: Path) -> subprocess.Popen:
    cmd = [PY, "-m", "daphne", "-v", "0", "-e", f"tcp:port={port}:interface=127.0.0.1:backlog=8192",
           "config.asgi:application"]
    return subprocess.Popen(pinned(0, cmd), env=env, cwd=root, stdout=log.open("w"), stderr=subprocess.STDOUT)


class Prober(threading.Thread):
    """Another client: `prompts/get` back to back on one connection until stopped; latencies in ms."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        self.latencies: list[float] = []
        self.errors = 0
        self.running = threading.Event()
        self.done = threading.Event()
        self.seconds = 0.0
        body = {"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {
            "name": "prompt-00042", "arguments": {"topic": "fan-out", "audience": "bench"}, "_meta": META}}
        self.body = json.dumps(body)
        self.headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/get",
                        "Mcp-Name": "prompt-00042"}

    def one(self) -> float:
        started = time.perf_counter()
        self.conn.request("POST", "/mcp", body=self.body, headers=self.headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.status != 200 or b'"messages"' not in data:
            self.errors += 1
        return (time.perf_counter() - started) * 1000

    def run(self) -> None:
        for _ in range(50):  # warm-up
            self.one()
        self.running.set()
        started = time.perf_counter()
        while not self.done.is_set():
            self.latencies.append(self.one())
        self.seconds = time.perf_counter() - started

    def figures(self) -> dict:
        lat = self.latencies
        return {"requests": len(lat), "errors": self.errors, "rps": round(len(lat) / max(self.seconds, 1e-9), 1),
                "p50_ms": round(statistics.median(lat), 2), "p99_ms": round(percentile(lat, 0.99), 2),
                "max_ms": round(max(lat), 1)}


def probe(port: int, seconds: float, during: Publisher | None = None, gap: float = 2.0) -> tuple[dict, int]:
    """The other client's figures over `seconds`, publishing every `gap` s meanwhile if `during`."""
    prober = Prober(port)
    prober.start()
    prober.running.wait(60)
    published = 0
    deadline = time.perf_counter() + seconds
    next_publish = time.perf_counter() + gap / 2
    while time.perf_counter() < deadline:
        if during is not None and time.perf_counter() >= next_publish:
            during.publish("api")
            published += 1
            next_publish += gap
        time.sleep(0.01)
    prober.done.set()
    prober.join(60)
    return prober.figures(), published


def hub_times(log: Path, start: int) -> list[float]:
    """The hub's delivery times (ms) logged after byte `start` of the worker's log."""
    text = log.read_text(errors="replace")[start:]
    return [float(line.rsplit(" in ", 1)[1].split()[0]) for line in text.splitlines()
            if "notifications queued for" in line and " in " in line]


def fan_out_times(frames: list[dict], commits: list[tuple[int, float]], n: int) -> dict:
    """Change written -> first / LAST listener per publish (ms), and how many were notified."""
    times = dict(commits)
    got = matched(frames, commits)
    complete = [cid for cid, _ in commits if cid in got]
    last = [(got[cid]["last"] - times[cid]) * 1000 for cid in complete]
    first = [(got[cid]["first"] - times[cid]) * 1000 for cid in complete]
    row: dict = {"changes": len(commits), "notified": len(complete),
                 "short": sum(1 for cid in complete if got[cid]["count"] < n)}
    if last:
        row.update(first_p50_ms=round(statistics.median(first), 1), last_p50_ms=round(statistics.median(last), 1),
                   last_p99_ms=round(percentile(last, 0.99), 1), last_max_ms=round(max(last), 1))
    return row


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process `pid` so far (a shared machine stretches wall time,
    not this)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def split(frames: list[dict], at: float) -> tuple[list[dict], list[dict]]:
    return [f for f in frames if f["first"] < at], [f for f in frames if f["first"] >= at]


def one_size(name: str, root: Path, env: dict[str, str], token: str, n: int, args: argparse.Namespace,
             tmp: Path) -> dict:
    port = free_port()
    log = tmp / f"{name}-{n}.log"
    server = worker(root, dict(env, LOG_LEVEL="INFO"), port, log)
    try:
        wait_port(port)
        publisher = Publisher(port, token, PASSWORD)
        for _ in range(3):  # warm-up: imports and caches
            publisher.publish("api")
            time.sleep(0.1)
        listeners = Listeners(port, n, sources=-(-n // PER_ADDRESS))
        time.sleep(2.0)
        quiet_marker = commit_times(env, 0, last=True)[-1][0]
        quiet_log = log.stat().st_size
        quiet_publishes = max(1, int(args.seconds / args.gap))
        cpu_before = cpu_seconds(server.pid)
        for _ in range(quiet_publishes):
            publisher.publish("api")
            time.sleep(args.gap)
        quiet_cpu = (cpu_seconds(server.pid) - cpu_before) / quiet_publishes
        quiet_hub = hub_times(log, quiet_log)
        quiet_end = time.time()
        baseline, _ = probe(port, args.seconds)
        marker = commit_times(env, 0, last=True)[-1][0]
        loaded, published = probe(port, args.seconds, during=publisher, gap=args.gap)
        time.sleep(2.0)
        frames = listeners.finish()
    finally:
        stop(server)
    quiet_frames, loaded_frames = split(frames, quiet_end)
    quiet_commits = [c for c in commit_times(env, quiet_marker) if c[0] <= marker]
    return {"code": name, "listeners": listeners.ready,
            "quiet": {**fan_out_times(quiet_frames, quiet_commits, listeners.ready),
                      "hub_p50_ms": round(statistics.median(quiet_hub), 1) if quiet_hub else None,
                      "worker_cpu_ms_per_publish": round(quiet_cpu * 1000, 1)},
            "loaded": {**fan_out_times(loaded_frames, commit_times(env, marker), listeners.ready),
                       "publishes": published},
            "baseline": baseline, "fan_out": loaded,
            "p99_ratio": round(loaded["p99_ms"] / baseline["p99_ms"], 2) if baseline["p99_ms"] else None}


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = [f"# Fan-out and another client, daphne, {time.strftime('%Y-%m-%d %H:%M')} (load average {load})", "",
           "One worker on CPU 0; listeners, the probing client (`prompts/get` back to back) and the publisher "
           f"on CPU 1. {args.seconds} s per phase; a REST publish every {args.gap} s in the quiet and fan-out "
           "phases. SQLite, 1k+1k entries; fan-out times from the change-log write.", "",
           "| code | listeners | quiet: worker CPU ms per publish | quiet: hub delivery p50 ms | "
           "quiet: commit -> first p50 / LAST p50 / p99 ms | "
           "with the client: commit -> LAST p50 / p99 ms | client p50 / p99 / max ms, no fan-out | "
           f"client p50 / p99 / max ms, fan-out every {args.gap} s | p99 ratio | client req/s |",
           "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        q, w, b, f = r["quiet"], r["loaded"], r["baseline"], r["fan_out"]
        out.append(f"| {r['code']} | {r['listeners']} | {q.get('worker_cpu_ms_per_publish')} | "
                   f"{q.get('hub_p50_ms')} | {q.get('first_p50_ms')} / "
                   f"{q.get('last_p50_ms')} / {q.get('last_p99_ms')} ({q['notified']}/{q['changes']}) | "
                   f"{w.get('last_p50_ms')} / {w.get('last_p99_ms')} ({w['notified']}/{w['publishes']}) | "
                   f"{b['p50_ms']} / {b['p99_ms']} / {b['max_ms']} | {f['p50_ms']} / {f['p99_ms']} / {f['max_ms']} | "
                   f"{r['p99_ratio']}x | {b['rps']} -> {f['rps']} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000")
    ap.add_argument("--seconds", type=float, default=20.0, help="length of each phase")
    ap.add_argument("--gap", type=float, default=2.0, help="seconds between publishes in the fan-out phase")
    ap.add_argument("--old", type=Path, default=None, help="another checkout to measure beside this one")
    args = ap.parse_args()
    raise_open_files()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-fanout-"))
    env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789",
               DATABASE_URL=f"sqlite:///{tmp}/fanout.sqlite3", MEDIA_ROOT=str(tmp / "media"))
    env.pop("REDIS_URL", None)
    codes = [("this", ROOT)] + ([("old", args.old.resolve())] if args.old else [])
    rows: list[dict] = []
    try:
        token = prepare(env)
        for n in (int(x) for x in args.sizes.split(",") if x):
            for name, root in codes:
                rows.append(one_size(name, root, env, token, n, args, tmp))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"fanout-{stamp}.json").write_text(json.dumps(rows, indent=1))
    text = markdown(rows, args)
    (out / f"fanout-{stamp}.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
