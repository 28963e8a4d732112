#!/usr/bin/env python3
"""Soak: does a worker's memory stay flat under steady reads, publishes and listeners?

One daphne worker (SQLite, 1,000 prompts + 1,000 resources); 100 open listen streams
(bench/listeners.py); the shared closed-loop load generator at C=16 (2026-07-28 reads, every
reply verified); one publish per second through the REST import (a new text for docs://doc-00001,
so every publish moves the catalog generation). RSS of the worker is sampled every 10 s from
/proc; the slope (least squares, MiB per minute) over the samples after the first minute
(warm-up: imports, catalogs, caches filling) is the figure: flat means about 0.

  .venv/bin/python bench/soak.py --minutes 30     # the full soak
  .venv/bin/python bench/soak.py --minutes 5      # a quick look

Writes JSON lines (one per sample, then the summary) and a Markdown summary to bench/results/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import SHARED, free_port, pinned, wait_port
from writes import PASSWORD, Listeners, Publisher, prepare

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (minutes, MiB)."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("-c", "--concurrency", type=int, default=16)
    ap.add_argument("-k", "--listeners", type=int, default=100)
    ap.add_argument("--interval", type=float, default=10.0, help="seconds between RSS samples")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-soak-"))
    env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789", DATABASE_URL=f"sqlite:///{tmp}/soak.sqlite3")
    env.pop("REDIS_URL", None)
    token = prepare(env)
    port = free_port()
    server = subprocess.Popen(pinned(0, [PY, "-m", "daphne", "-v", "0", "-e",
                                         f"tcp:port={port}:interface=127.0.0.1:backlog=4096",
                                         "config.asgi:application"]),
                              env=env, cwd=ROOT, stdout=(tmp / "daphne.log").open("w"), stderr=subprocess.STDOUT)
    seconds = args.minutes * 60
    samples: list[dict] = []
    publishes = {"n": 0, "errors": 0}
    stop = threading.Event()
    try:
        wait_port(port)
        publisher = Publisher(port, token, PASSWORD)
        listeners = Listeners(port, args.listeners)
        load = subprocess.Popen(pinned(1, [PY, str(SHARED / "mcp_load.py"), "--url", f"http://127.0.0.1:{port}/mcp",
                                           "--mode", "modern", "-c", str(args.concurrency), "-d", str(int(seconds)),
                                           "--warmup", "0", "--prompts", "1000", "--resources", "1000"]),
                                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)

        def publish_every_second() -> None:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    publisher.publish("import")
                    publishes["n"] += 1
                except SystemExit:
                    publishes["errors"] += 1
                stop.wait(max(0.0, 1.0 - (time.monotonic() - started)))

        thread = threading.Thread(target=publish_every_second, daemon=True)
        thread.start()
        began = time.monotonic()
        while time.monotonic() - began < seconds:
            elapsed = (time.monotonic() - began) / 60
            samples.append({"minute": round(elapsed, 2), "rss_mib": round(rss_mib(server.pid), 1),
                            "publishes": publishes["n"]})
            print(json.dumps(samples[-1]), flush=True)
            time.sleep(args.interval)
        stop.set()
        thread.join(10)
        samples.append({"minute": round((time.monotonic() - began) / 60, 2), "rss_mib": round(rss_mib(server.pid), 1),
                        "publishes": publishes["n"]})
        load_out, _ = load.communicate(timeout=120)
        listeners.finish()
    finally:
        stop.set()
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    lines = load_out.strip().splitlines() if load_out else []
    load_result = json.loads(lines[-1]) if lines else {}
    steady = [(s["minute"], s["rss_mib"]) for s in samples if s["minute"] >= 1.0]
    summary = {"bench": "soak", "minutes": args.minutes, "concurrency": args.concurrency, "listeners": args.listeners,
               "publishes": publishes["n"], "publish_errors": publishes["errors"],
               "rss_start_mib": samples[0]["rss_mib"], "rss_after_warmup_mib": steady[0][1] if steady else None,
               "rss_end_mib": samples[-1]["rss_mib"], "slope_mib_per_min": round(slope(steady), 3),
               "rps": load_result.get("rps"), "load_errors": load_result.get("errors")}
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"soak-{stamp}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in [*samples, summary]))
    text = (f"# Soak, {time.strftime('%Y-%m-%d %H:%M')}\n\n{args.minutes} min, C={args.concurrency}, "
            f"{args.listeners} listeners, {publishes['n']} publishes ({publishes['errors']} failed), "
            f"{summary['rps']} req/s ({summary['load_errors']} errors)\n\n"
            f"RSS {summary['rss_start_mib']} MiB at start, {summary['rss_after_warmup_mib']} after 1 min, "
            f"{summary['rss_end_mib']} at the end; slope after warm-up {summary['slope_mib_per_min']} MiB/min\n")
    (out / f"soak-{stamp}.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
