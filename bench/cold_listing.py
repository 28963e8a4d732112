#!/usr/bin/env python3
"""A full listing right after a start (cold: no catalog yet) against the same walk once the
catalog is built (warm), in one run, so the ratio compares like with like.

On a fresh SQLite file: migrate, `bench_load --prompts N --resources N`, then walk every page of
`prompts/list` and `resources/list` (following nextCursor) through the endpoint's handler layer
(`mcp_endpoint.handlers.lists`, in process, as a request reaches it after the transport):

- cold: as right after a process start: no fresh catalog, nothing in the result cache, and the
  background build held back (`warm_catalog` answers nothing), so every page of the walk really
  is served by the cold path (registry/serving/pages.py); the bench checks that each page's
  catalog was a partial one and that no whole catalog exists when the walk ends;
- warm: after the catalog is built, the result cache emptied first, so each page is made from
  the catalog (what a walk costs the first time after a build; `cached` is the walk again, every
  page a cache hit).

Each repeat (--repeat) walks cold, builds the whole catalog (timed: what a real server's
background build takes before its pages turn warm), then walks warm and cached, so cold and warm
see like conditions; the table gives medians and the median of the repeats' cold/warm ratios.
--profile prints, for prompts and then resources, cProfile's top functions of the cold path's
database part and the queries of one cold page. Prints a Markdown table with the conditions
(machine, load average, what ran beside) and writes bench/results/cold-listing-<time>.json.

  .venv/bin/python bench/cold_listing.py [--size 20000] [--repeat 3] [--profile] [--db /tmp/x.sqlite3]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from conditions import busy_processes, load_average, machine, today, versions  # noqa: E402

METHODS = ("prompts/list", "resources/list")


def walk(handler: Any, ctx: Any, cold: bool, seen: list[Any]) -> tuple[float, int]:
    """(seconds, pages) of one walk through every page of a list."""
    from mcp_endpoint.handlers.catalogs import reset_caches
    from registry import changes

    async def run() -> tuple[float, int]:
        pages, cursor, spent = 0, None, 0.0
        while True:
            if cold:
                assert_cold()
            started = time.perf_counter()
            raw = await handler(ctx, {"cursor": cursor} if cursor else {})
            spent += time.perf_counter() - started
            pages += 1
            cursor = json.loads(raw.data).get("nextCursor")
            if not cursor:
                return spent, pages

    def assert_cold() -> None:
        from registry.serving import catalogs

        if catalogs.cached_catalog("production") is not None:
            raise RuntimeError("a whole catalog is fresh: this walk would not be cold")

    if cold:
        changes.bump_generation()  # no fresh catalog, as after a start
    reset_caches()  # no cached page
    seen.clear()
    return asyncio.run(run())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20000, help="N prompts + N resources")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--db", default="/tmp/cold-listing.sqlite3")
    parser.add_argument("--reuse", action="store_true", help="keep an existing --db of this size (no reload)")
    args = parser.parse_args()
    fresh = not (args.reuse and Path(args.db).exists())
    if fresh:
        for suffix in ("", "-wal", "-shm"):
            Path(args.db + suffix).unlink(missing_ok=True)
    os.environ.update(DATABASE_URL=f"sqlite:///{args.db}", MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0",
                      DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789",
                      DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings"))
    os.environ.pop("REDIS_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from config.gc_tuning import tune_for_serving
    from mcp_endpoint.dispatch.discovery import server_info
    from mcp_endpoint.handlers import catalogs as handler_catalogs
    from mcp_endpoint.handlers import reads
    from mcp_endpoint.handlers.identity import anonymous
    from mcp_endpoint.handlers.lists import prompts_list, resources_list
    from mcp_endpoint.wire.context import RequestContext
    from registry.serving import catalogs

    if fresh:
        call_command("migrate", verbosity=0)
        started = time.perf_counter()
        call_command("bench_load", prompts=args.size, resources=args.size, verbosity=0)
        print(f"bench_load {args.size}+{args.size}: {time.perf_counter() - started:.1f} s", flush=True)
    # A serving process tunes its garbage collector once it starts serving (config/gc_tuning.py:
    # start-up objects frozen, older passes rare); without it every cold walk here paid about 11
    # full collections over the runs it built, which no served walk pays.
    tune_for_serving()
    before_load = load_average()
    ctx = RequestContext(version="2026-07-28", modern=True, identity=anonymous(),
                         server_info=server_info("2026-07-28"), session=None)
    handlers = {"prompts/list": prompts_list, "resources/list": resources_list}

    async def no_hub() -> None:  # the hub's catch-up is not what a listing costs; it never starts here
        return None

    handler_catalogs._start_hub = no_hub  # type: ignore[assignment]
    partial: list[Any] = []
    real_page = reads.source.page_catalog

    def page_catalog(*a: Any) -> Any:
        found = real_page(*a)
        partial.append(getattr(found, "partial", False))
        db_reads.append(1)
        return found

    reads.source.page_catalog = page_catalog  # type: ignore[method-assign]
    db_reads: list[int] = []
    real_cached = getattr(reads.source, "cached_page", None)
    if real_cached is not None:  # runs of the list kept in memory (registry/serving/page_runs.py)
        def cached_page(*a: Any) -> Any:
            found = real_cached(*a)
            if found is not None:
                partial.append(getattr(found, "partial", False))
            return found

        reads.source.cached_page = cached_page  # type: ignore[method-assign]
    reads.source.warm_catalog = lambda label: None  # type: ignore[method-assign]  # held back: every page cold
    results: dict[str, dict[str, Any]] = {}
    for method in METHODS:
        handler = handlers[method]
        times: dict[str, list[float]] = {"cold": [], "warm": [], "cached": [], "build": []}
        pages: dict[str, int] = {}
        reads_per_walk = 0
        for _ in range(args.repeat):  # cold, build, warm, cached in turn: each repeat sees like conditions
            partial.clear()
            db_reads.clear()
            spent, pages["cold"] = walk(handler, ctx, True, partial)
            if len(partial) != pages["cold"] or not all(partial):
                raise RuntimeError(f"{method}: a page of the cold walk was not read cold: {partial}")
            times["cold"].append(spent)
            reads_per_walk = len(db_reads)
            started = time.perf_counter()
            catalogs.load_catalog("production")
            times["build"].append(time.perf_counter() - started)
            spent, pages["warm"] = walk(handler, ctx, False, [])
            times["warm"].append(spent)
            spent, pages["cached"] = cached_walk(handler, ctx)
            times["cached"].append(spent)
        row: dict[str, Any] = {}
        for mode, spent_list in times.items():
            total = statistics.median(spent_list)
            row[mode] = {"total_ms": round(total * 1000, 1), "runs_ms": [round(t * 1000, 1) for t in spent_list]}
            if mode in pages:
                row[mode].update(per_page_ms=round(total * 1000 / pages[mode], 2), pages=pages[mode])
        row["cold"]["database_reads"] = reads_per_walk
        row["cold_to_warm"] = round(statistics.median(c / w for c, w in zip(times["cold"], times["warm"],
                                                                            strict=True)), 2)
        results[method] = row
        handler_catalogs.reset_caches()
        catalogs.forget_catalogs()
    if args.profile:
        for kind in ("prompt", "resource"):
            profile(kind, connection, CaptureQueriesContext)
    after_load = load_average()
    beside = [" ".join(name.split()[:1] + name.split()[-1:]) for name in busy_processes({os.getpid()})]
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    conditions = {"date": today(), "commit": commit, "machine": machine(), "load_before": before_load,
                  "load_after": after_load, "beside": beside, "versions": versions(), "size": args.size,
                  "repeat": args.repeat}
    print(f"\n{args.size} prompts + {args.size} resources, SQLite, in process (handler layer), medians (the ratio: "
          f"median of each repeat's cold/warm) of "
          f"{args.repeat}; commit {commit}; {conditions['machine']}; load {before_load} -> {after_load}; "
          f"beside: {', '.join(beside) or 'nothing over 5%'}\n")
    print("| list | pages | cold ms/page | cold total ms | cold database reads | warm ms/page | warm total ms | "
          "cold/warm | cached ms/page | whole catalog build ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for method, row in results.items():
        print(f"| {method} | {row['cold']['pages']} | {row['cold']['per_page_ms']} | {row['cold']['total_ms']} | "
              f"{row['cold']['database_reads']} | "
              f"{row['warm']['per_page_ms']} | {row['warm']['total_ms']} | {row['cold_to_warm']}x | "
              f"{row['cached']['per_page_ms']} | {row['build']['total_ms']} |")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"cold-listing-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(
        json.dumps({"conditions": conditions, "results": results}, indent=2))


def cached_walk(handler: Any, ctx: Any) -> tuple[float, int]:
    """Walk twice without clearing the result cache; time the second (every page a hit)."""

    async def run() -> tuple[float, int]:
        spent, pages = 0.0, 0
        for timed in (False, True):
            cursor, pages = None, 0
            while True:
                started = time.perf_counter()
                raw = await handler(ctx, {"cursor": cursor} if cursor else {})
                if timed:
                    spent += time.perf_counter() - started
                pages += 1
                cursor = json.loads(raw.data).get("nextCursor")
                if not cursor:
                    break
        return spent, pages

    return asyncio.run(run())


def profile(kind: str, connection: Any, capture: Any) -> None:
    """cProfile of the cold path's database part over a whole walk of `kind` (prompt, resource;
    registry/serving/pages.py, run in this thread: the handler runs it in an executor thread, which
    the profiler does not see), and the queries of one cold page after a cursor."""
    from registry import changes
    from registry.serving import catalogs
    from registry.serving import pages as catalog_pages
    from registry.serving.viewer import Viewer

    catalogs.forget_catalogs()
    changes.bump_generation()
    viewer = Viewer()

    key = {"prompt": "name", "resource": "uri"}[kind]

    def page(after: str | None) -> str | None:
        part = catalog_pages.page_catalog("production", kind, viewer, after, 101)
        items = part.prompts(viewer) if kind == "prompt" else part.resources(viewer)
        listed = [p[key] for p in items if after is None or p[key] > after]
        return listed[99] if len(listed) > 100 else None

    second = page(None)
    with capture(connection) as queries:
        page(second)
    print(f"\n{kind}s: queries of one cold read (the run the second page starts): {len(queries)}")
    for query in queries:
        print(f"  {query['time']}s  {query['sql'][:400]}")
    profiler = cProfile.Profile()
    profiler.enable()
    after = None
    while True:
        after = page(after)
        if after is None:
            break
    profiler.disable()
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(40)
    pstats.Stats(profiler).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
