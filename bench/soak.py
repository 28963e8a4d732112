#!/usr/bin/env python3
"""Soak: does a worker's memory stay flat, and does every publish reach every listener, under
steady reads, list loops, publishes and listeners?

One daphne worker (SQLite, 1,000 prompts + 1,000 resources, CPU 0), for --minutes:
  - K open `subscriptions/listen` streams (bench/listeners.py --by-uri, CPU 1), each subscribed
    to the --rotate resources the publishes change (docs://doc-00100 onwards);
  - R clients looping prompts/list, resources/list and resources/templates/list (bench/readers.py,
    CPU 1): after each publish a list request starts a full catalog rebuild, the traffic that
    used to race the hub's deliveries and lose announcements (bench/lost.py);
  - the shared closed-loop load generator at C (../shared/bench/mcp_load.py, 2026-07-28 reads,
    every reply verified; CPU 1, so its req/s shares that core with the readers and listeners);
  - one publish per second through the REST import (POST /api/v1/import/?publish=true) on a fixed
    schedule (start to start, up to --publishers at once on their own connections, as in
    bench/lost.py), publish i changing the (i mod --rotate)-th of those resources, so every
    notification names the publish it announces: a resource is published again only every
    --rotate s, which must exceed --deadline.

Memory: the worker's RSS is sampled every --interval s from /proc; the figures are the slope (least
squares, MiB per minute) over the samples after the first minute (warm-up: imports, catalogs,
caches filling) and over the second half of the run alone, where bounded caches have filled and
only growth with the number of publishes is left: flat means about 0. The report also tables
RSS at each tenth of the run, so a curve that levels off is told from a line.

Announcements: a listener heard publish i if an update for its resource arrived within --deadline
s of the change-log row's `created_at` (written inside the publishing transaction, a hair before
its commit). Reported: publishes, "lost" = publishes some listener did not hear, "unheard" =
publishes NO listener heard, "missing" = listener-notifications missing in all, "late" = updates
that came after their publish's deadline, p50/p99 change written -> LAST listener over the
publishes every listener heard, the server's delivery log lines "0 notifications queued for K
listeners" with K > 0 (the hub judged a change to announce nothing while listeners were open)
and its WARNING lines (LOG_LEVEL=INFO; the log is kept beside the results when any of these
figures is not 0).
Beside them: the load generator's req/s and errors, the readers' requests and errors.

  .venv/bin/python bench/soak.py --minutes 30     # the full soak
  .venv/bin/python bench/soak.py --minutes 5      # a quick look
  options: -c 16 -k 100 --readers 16 --rotate 8 --deadline 5 --publishers 4 --interval 10

Writes bench/results/soak-<time>.jsonl (one line per RSS sample, then the summary) and .md.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from lost import FIRST_DOC, Held, server, silent_batches, stop
from run import SHARED, free_port, pinned, wait_port
from writes import PASSWORD, Publisher, manage, percentile, prepare

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def rss_curve(samples: list[dict], parts: int = 10) -> list[tuple[float, int, float]]:
    """(minute, publishes so far, RSS MiB) at the start and at each 1/`parts` of the run."""
    if not samples:
        return []
    end = samples[-1]["minute"]
    picked: list[dict] = []
    for i in range(parts + 1):
        at = end * i / parts
        nearest = min(samples, key=lambda s: abs(s["minute"] - at))
        if not picked or nearest is not picked[-1]:
            picked.append(nearest)
    return [(s["minute"], s["publishes"], s["rss_mib"]) for s in picked]


def slope(points: list[tuple[float, float]]) -> float:
    """Least-squares slope of (minutes, MiB)."""
    if len(points) < 2:
        return 0.0
    n = len(points)
    mx = sum(x for x, _ in points) / n
    my = sum(y for _, y in points) / n
    var = sum((x - mx) ** 2 for x, _ in points)
    return sum((x - mx) * (y - my) for x, y in points) / var if var else 0.0


@dataclass
class Publish:
    uri: str
    sent: float = 0.0  # wall clock when the request went out
    ms: float | None = None  # request latency; None: not answered with a publish
    at: float | None = None  # created_at of its change-log row


def publish_on_schedule(pool: queue.Queue[Publisher], uris: list[str], gap: float, size: int,
                        halt: threading.Event, done: list[Publish]) -> None:
    """Publish uris[i % len] at start + i * gap until `halt`, up to `size` requests at once."""

    def one(record: Publish) -> None:
        publisher = pool.get()
        try:
            record.sent = time.time()
            record.ms = publisher.publish("import", record.uri)
        except SystemExit:  # Publisher reports a failed publish so
            pass
        finally:
            pool.put(publisher)

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=size) as executor:
        while not halt.wait(max(0.0, start + len(done) * gap - time.monotonic())):
            done.append(Publish(uris[len(done) % len(uris)]))
            executor.submit(one, done[-1])


def change_times(env: dict[str, str], uris: list[str]) -> dict[str, list[float]]:
    """{uri: sorted created_at epochs of its change-log rows}."""
    code = ("import json; from registry.models import ChangeLogEntry as C; "
            f"rows = C.objects.filter(entry_key__in={uris!r}).values_list('entry_key', 'created_at'); "
            "print(json.dumps([[k, t.timestamp()] for k, t in rows]))")
    found: dict[str, list[float]] = {u: [] for u in uris}
    for key, at in json.loads(manage(env, "shell", "-v", "0", "-c", code).strip().splitlines()[-1]):
        found[key].append(at)
    return {u: sorted(times) for u, times in found.items()}


def announcements(publishes: list[Publish], streams: list[dict[str, list[float]]],
                  written: dict[str, list[float]], deadline: float) -> dict:
    """Which publish reached which listener: each update is the latest publish of its URI written
    before it arrived; heard if within `deadline` of that write, else late."""
    answered = [p for p in publishes if p.ms is not None]
    for p in answered:  # its change-log row: written while its request was in flight
        times = written.get(p.uri, [])
        i = bisect.bisect_left(times, p.sent - 0.05)
        if i < len(times) and times[i] <= p.sent + (p.ms or 0.0) / 1000 + 0.05:
            p.at = times[i]
    found = sorted((p for p in answered if p.at is not None), key=lambda p: p.at or 0.0)
    by_uri: dict[str, list[Publish]] = {}
    for p in found:
        by_uri.setdefault(p.uri, []).append(p)
    heard: dict[int, int] = {}  # id(publish) -> listeners that heard it in time
    last: dict[int, float] = {}  # id(publish) -> latest in-time receipt
    late = 0
    for stream in streams:
        told: set[int] = set()
        for uri, receipts in stream.items():
            mine = by_uri.get(uri, [])
            starts = [p.at or 0.0 for p in mine]
            for r in receipts:
                i = bisect.bisect_right(starts, r) - 1
                if i < 0 or r - starts[i] > deadline:
                    late += 1
                    continue
                key = id(mine[i])
                last[key] = max(last.get(key, 0.0), r)
                if key not in told:
                    told.add(key)
                    heard[key] = heard.get(key, 0) + 1
    k = len(streams)
    counts = [heard.get(id(p), 0) for p in found]
    last_ms = [(last[id(p)] - (p.at or 0.0)) * 1000
               for p, n in zip(found, counts, strict=True) if n == k and k]
    request_ms = [p.ms or 0.0 for p in answered]
    return {"publishes": len(publishes), "publish_errors": len(publishes) - len(answered),
            "changes_not_found": len(answered) - len(found), "judged": len(found),
            "lost": sum(1 for n in counts if n < k), "unheard": sum(1 for n in counts if n == 0),
            "missing": sum(k - n for n in counts), "late": late,
            "last_p50_ms": round(statistics.median(last_ms), 1) if last_ms else None,
            "last_p99_ms": round(percentile(last_ms, 0.99), 1) if last_ms else None,
            "publish_p50_ms": round(statistics.median(request_ms), 1) if request_ms else None,
            "publish_p99_ms": round(percentile(request_ms, 0.99), 1) if request_ms else None}


def markdown(s: dict, started_load: str) -> str:
    return (f"# Soak, {time.strftime('%Y-%m-%d %H:%M')}\n\n"
            f"{s['minutes']} min, one daphne worker (SQLite, 1k+1k); C={s['concurrency']} load generator, "
            f"{s['readers']} list readers, {s['listeners']} listeners; one REST-import publish per second "
            f"over {s['rotate']} resources (at most {s['publishers']} at once), deadline {s['deadline']} s. "
            f"Load average at the start {started_load}, at the end {s['load_end']}.\n\n"
            f"| figure | value |\n|---|---|\n"
            f"| publishes (failed; change not found) | {s['publishes']} ({s['publish_errors']}; "
            f"{s['changes_not_found']}) |\n"
            f"| lost (some listener missed) | {s['lost']} |\n"
            f"| unheard (no listener heard) | {s['unheard']} |\n"
            f"| missing listener-notifications | {s['missing']} of {s['judged'] * s['listeners']} |\n"
            f"| late updates (after the deadline) | {s['late']} |\n"
            f"| change written -> LAST listener p50 / p99 ms | {s['last_p50_ms']} / {s['last_p99_ms']} |\n"
            f"| publish request p50 / p99 ms | {s['publish_p50_ms']} / {s['publish_p99_ms']} |\n"
            f"| 0-notification batches with listeners open | {s['silent_batches']} |\n"
            f"| server log warnings | {s['server_warnings']} |\n"
            f"| RSS start / after 1 min / end MiB | {s['rss_start_mib']} / {s['rss_after_warmup_mib']} / "
            f"{s['rss_end_mib']} |\n"
            f"| RSS slope after warm-up MiB/min | {s['slope_mib_per_min']} |\n"
            f"| RSS slope over the second half MiB/min | {s['slope_second_half_mib_per_min']} |\n"
            f"| load generator req/s (errors) | {s['rps']} ({s['load_errors']}) |\n"
            f"| readers' requests, req/s (errors) | {s['reader_requests']}, {s['reader_rps']} "
            f"({s['reader_errors']}) |\n\n"
            f"RSS over the run:\n\n| minute | publishes | RSS MiB |\n|---|---|---|\n"
            + "".join(f"| {m} | {n} | {r} |\n" for m, n, r in s["rss_curve"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30.0)
    ap.add_argument("-c", "--concurrency", type=int, default=16)
    ap.add_argument("-k", "--listeners", type=int, default=100)
    ap.add_argument("--readers", type=int, default=16, help="clients looping the list methods")
    ap.add_argument("--rotate", type=int, default=8, help="resources the publishes take in turn")
    ap.add_argument("--deadline", type=float, default=5.0, help="seconds from the change to count it heard")
    ap.add_argument("--publishers", type=int, default=4, help="publishes in flight at most")
    ap.add_argument("--interval", type=float, default=10.0, help="seconds between RSS samples")
    args = ap.parse_args()
    gap = 1.0
    if args.rotate * gap <= args.deadline:
        sys.exit("--rotate must exceed --deadline (s): a resource is published again every --rotate s")
    tmp = Path(tempfile.mkdtemp(prefix="mcp-soak-"))
    env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789", LOG_LEVEL="INFO",
               DATABASE_URL=f"sqlite:///{tmp}/soak.sqlite3", MEDIA_ROOT=str(tmp / "media"))
    env.pop("REDIS_URL", None)
    started_load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    uris = [f"docs://doc-{FIRST_DOC + i:05d}" for i in range(args.rotate)]
    seconds = args.minutes * 60
    samples: list[dict] = []
    publishes: list[Publish] = []
    halt = threading.Event()
    log = tmp / "daphne.log"
    try:
        token = prepare(env)
        port = free_port()
        proc = server(env, port, log, cpu=0)
        try:
            wait_port(port)
            pool: queue.Queue[Publisher] = queue.Queue()
            for i in range(args.publishers):  # own connection each; texts never coincide
                publisher = Publisher(port, token, PASSWORD)
                publisher.n = 1_000_000 * (i + 1)
                pool.put(publisher)
            for _ in range(3):  # warm-up (docs://doc-00001): imports, caches, the catalog
                publisher.publish("import")
            listeners = Held("listeners.py", "--port", str(port), "-k", str(args.listeners),
                             "--uris", ",".join(uris), "--by-uri")
            readers = Held("readers.py", "-r", str(args.readers), f"--port={port}") if args.readers else None
            load = subprocess.Popen(pinned(1, [PY, str(SHARED / "mcp_load.py"), "--url",
                                               f"http://127.0.0.1:{port}/mcp", "--mode", "modern",
                                               "-c", str(args.concurrency), "-d", str(int(seconds)),
                                               "--warmup", "0", "--prompts", "1000", "--resources", "1000"]),
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            thread = threading.Thread(target=publish_on_schedule, daemon=True,
                                      args=(pool, uris, gap, args.publishers, halt, publishes))
            thread.start()
            began = time.monotonic()
            while True:
                elapsed = time.monotonic() - began
                samples.append({"minute": round(elapsed / 60, 2), "rss_mib": round(rss_mib(proc.pid), 1),
                                "publishes": len(publishes), "load": round(os.getloadavg()[0], 2)})
                print(json.dumps(samples[-1]), flush=True)
                if elapsed >= seconds:
                    break
                time.sleep(min(args.interval, seconds - elapsed))
            halt.set()
            thread.join(60)
            time.sleep(args.deadline + 1.0)  # the last publishes' notifications
            streams: list[dict[str, list[float]]] = listeners.finish()["streams"]
            read = readers.finish() if readers is not None else {}
            load_out, _ = load.communicate(timeout=120)
        finally:
            halt.set()
            stop(proc)
        written = change_times(env, uris)
        silent = silent_batches(log)
        server_log = log.read_text(errors="replace")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = load_out.strip().splitlines() if load_out else []
    load_result = json.loads(lines[-1]) if lines else {}
    steady = [(s["minute"], s["rss_mib"]) for s in samples if s["minute"] >= 1.0]
    second_half = [(s["minute"], s["rss_mib"]) for s in samples if s["minute"] >= samples[-1]["minute"] / 2]
    summary = {"bench": "soak", "minutes": args.minutes, "concurrency": args.concurrency,
               "listeners": listeners.ready, "readers": args.readers, "rotate": args.rotate,
               "deadline": args.deadline, "publishers": args.publishers,
               **announcements(publishes, streams, written, args.deadline), "silent_batches": silent,
               "server_warnings": server_log.count(" WARNING "),
               "rss_start_mib": samples[0]["rss_mib"],
               "rss_after_warmup_mib": steady[0][1] if steady else None,
               "rss_end_mib": samples[-1]["rss_mib"], "slope_mib_per_min": round(slope(steady), 3),
               "slope_second_half_mib_per_min": round(slope(second_half), 3), "rss_curve": rss_curve(samples),
               "rps": load_result.get("rps"), "load_errors": load_result.get("errors"),
               "reader_requests": read.get("requests", 0),
               "reader_rps": round(read["requests"] / read["seconds"], 1) if read.get("seconds") else 0,
               "reader_errors": read.get("errors", 0), "load_start": started_load,
               "load_end": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    if read.get("error_samples"):
        summary["reader_error_samples"] = read["error_samples"]
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"soak-{stamp}.jsonl").write_text("".join(json.dumps(s) + "\n" for s in [*samples, summary]))
    text = markdown(summary, started_load)
    (out / f"soak-{stamp}.md").write_text(text)
    if summary["lost"] or summary["late"] or silent or summary["server_warnings"]:
        (out / f"soak-{stamp}.log").write_text(server_log)  # the delivery lines, the warnings
    print(json.dumps(summary), "\n\n" + text)


if __name__ == "__main__":
    main()
