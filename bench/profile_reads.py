#!/usr/bin/env python3
"""Where a read's time goes on one uvicorn worker: cProfile of the real server under load.

Serves config.asgi:application on uvicorn in this process (the settings of `manage.py serve`,
one worker, pinned to CPU 0), drives it from CPU 1 with the shared load generator
(`../shared/bench/mcp_load.py`, one method only: `--method get` is prompts/get, `read`
resources/read, at 2026-07-28), profiles the serving thread for `--seconds` after `--warmup`, and
prints the top functions by own time and the own time summed by package (uvicorn and httptools,
Django, Channels, this project's modules, json, the event loop...). cProfile roughly doubles the
cost of each Python call, so the shares, not the absolute times, are the result.

Usage: .venv/bin/python bench/profile_reads.py [--method get|read] [--seconds 5] [--prompts 1000 --resources 1000]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import pstats
import subprocess
import sys
import tempfile
import threading
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MCP_SHARED_BENCH", ROOT.parent / "shared" / "bench"))
PY = sys.executable
MIX = {"get": "get=1", "read": "read=1"}
PACKAGES = (("uvicorn", "uvicorn"), ("httptools", "httptools"), ("django", "django"), ("channels", "channels"),
            ("asgiref", "asgiref"), ("mcp_endpoint", "this project: mcp_endpoint"),
            ("registry", "this project: registry"), ("config", "this project: config"), ("json", "json"),
            ("asyncio", "asyncio"), ("uvloop", "uvloop"))


def package_of(filename: str) -> str:
    parts = Path(filename).parts
    for needle, label in PACKAGES:
        if needle in parts:
            return label
    if filename.startswith("~") or filename.startswith("<"):
        return "builtins (C functions: socket, dict, str, ...)"
    return "other"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--method", choices=sorted(MIX), default="get")
    ap.add_argument("--seconds", type=float, default=5.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--resources", type=int, default=1000)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="mcp-profile-"))
    os.environ.update(DATABASE_URL=f"sqlite:///{tmp}/bench.sqlite3", MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0",
                      ALLOWED_HOSTS="127.0.0.1,localhost", DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789",
                      DJANGO_SETTINGS_MODULE="config.settings")
    os.environ.pop("REDIS_URL", None)
    subprocess.run([PY, "manage.py", "migrate", "--noinput"], cwd=ROOT, check=True, capture_output=True)
    subprocess.run([PY, "manage.py", "bench_load", "--prompts", str(args.prompts), "--resources",
                    str(args.resources)], cwd=ROOT, check=True, capture_output=True)
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})

    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    import uvicorn

    from mcp_endpoint.management.commands.serve import uvicorn_options

    port = 18000 + os.getpid() % 10000
    options = uvicorn_options(host="127.0.0.1", port=port, workers=1)
    options.pop("workers")
    profile = cProfile.Profile()

    class ProfiledServer(uvicorn.Server):
        async def startup(self, sockets=None) -> None:
            await super().startup(sockets)
            loop = asyncio.get_running_loop()
            loop.call_later(args.warmup, profile.enable)  # on the serving thread itself
            loop.call_later(args.warmup + args.seconds, profile.disable)

    server = ProfiledServer(uvicorn.Config(**options))
    load_cmd = [PY, str(SHARED / "mcp_load.py"), "--url", f"http://127.0.0.1:{port}/mcp", "--mode", "modern",
                "--mix", MIX[args.method], "-c", str(args.concurrency), "-d", str(args.seconds),
                "--warmup", str(args.warmup), "--prompts", str(args.prompts), "--resources", str(args.resources)]
    if (os.cpu_count() or 1) > 1:
        load_cmd = ["taskset", "-c", "1", *load_cmd]
    load_out: list[str] = []

    def drive() -> None:
        while not server.started:
            threading.Event().wait(0.1)
        done = subprocess.run(load_cmd, capture_output=True, text=True, timeout=args.seconds + args.warmup + 60)
        load_out.append(done.stdout.strip())
        server.should_exit = True

    threading.Thread(target=drive, daemon=True).start()
    server.run()

    stats = pstats.Stats(profile)
    total = sum(row[2] for row in stats.stats.values())  # type: ignore[attr-defined]
    by_package: dict[str, float] = defaultdict(float)
    for (filename, _line, _name), row in stats.stats.items():  # type: ignore[attr-defined]
        by_package[package_of(filename)] += row[2]
    print(f"load: {load_out[0] if load_out else 'no output'}\n")
    print(f"own time by package, {args.method} ({total:.2f} s profiled):")
    for label, seconds in sorted(by_package.items(), key=lambda kv: -kv[1]):
        print(f"  {100 * seconds / total:5.1f}%  {label}")
    print()
    stats.sort_stats("tottime").print_stats(args.top)
    stats.sort_stats("cumulative").print_stats(args.top)


if __name__ == "__main__":
    main()
