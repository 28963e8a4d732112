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
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from availability_common import (
    ROOT,
    Row,
    Served,
    certificate,
    commit_of,
    prepare,
    server_env,
    settle,
    start_server,
    stop_server,
)
from availability_scenarios import batches, bodies, metadata_documents, patterns, registrations, slow_heads
from run import free_port

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
