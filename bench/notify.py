#!/usr/bin/env python3
"""Notification fan-out: the publishing request's latency, commit -> last listener, idle memory.

Every trigger is a real publish of docs://doc-00001 through the REST API (draft edited first,
untimed; then POST /api/v1/resources/<id>/publish/), on SQLite with 1,000 prompts + 1,000
resources, `subscriptions/listen` streams (2026-07-28) held by bench/listeners.py processes.
Reported separately:

  1. one daphne worker, K listeners (default 1,000) on it: the publishing request's own
     latency, and change written -> first / LAST of the K listeners;
  2. two daphne workers over Redis (channels_redis, --redis, default redis://127.0.0.1:6379/5),
     K listeners on EACH, publish through B: change written -> last of all 2K listeners;
  3. one daphne worker with N idle listeners (default 10,000): resident memory per listener
     (RSS delta / N, after the streams are acknowledged) and the fan-out to all N.

"Change written" is the change-log row's `created_at`, inside the publishing transaction (a
hair before its commit), so the figures slightly over-state commit -> listener. Each
notification is matched to the newest change written before it arrived; a worker that takes
two changes in one batch sends one notification for both (by design), and "changes notified"
counts the changes that had their own. Publishes are
--gap seconds apart (a single publish, not a flood; at least 2 s with N idle listeners);
--gap 0 publishes back to back. The
server runs on CPU 0 (worker B on CPU 1), listeners and publisher on CPU 1. Streams from one
peer address are capped at 2,000 (MAX_STREAMS_PER_CLIENT), so large N connect from several
loopback addresses. The open-files limit is raised to the hard limit in this process and in
bench/listeners.py (the server raises its own, mcp_endpoint/transport/open_files.py).

--peer also runs the older comparison with the official-SDK peer (../shared/bench).
--server uvicorn runs the same on uvicorn workers (uvloop, httptools) for comparison.
Usage: .venv/bin/python bench/notify.py [-k 1000] [-n 10000] [-t 30] [--gap 0.3] [--skip-two] [--server uvicorn]
Writes bench/results/notify-<time>.{json,md}.
"""

from __future__ import annotations

import argparse
import bisect
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import SHARED, free_port, pinned, wait_port
from writes import PASSWORD, Listeners, Publisher, commit_times, percentile, prepare

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PER_ADDRESS = 2000  # MAX_STREAMS_PER_CLIENT for an anonymous peer address


def raise_open_files() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


SERVER = "daphne"  # --server


def daphne(env: dict[str, str], port: int, log: Path, cpu: int = 0) -> subprocess.Popen:
    """One worker: daphne (the embedded default), or uvicorn with --server uvicorn for comparison."""
    if SERVER == "uvicorn":
        cmd = [PY, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port),
               "--loop", "uvloop", "--http", "httptools", "--no-access-log", "--backlog", "8192"]
    else:
        cmd = [PY, "-m", "daphne", "-v", "0", "-e", f"tcp:port={port}:interface=127.0.0.1:backlog=8192",
               "config.asgi:application"]
    return subprocess.Popen(pinned(cpu, cmd), env=env, cwd=ROOT, stdout=log.open("w"), stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def publishes(publisher: Publisher, t: int, gap: float) -> list[float]:
    """T publishes through the REST API, `gap` s apart; each request's own latency in ms."""
    times = []
    for _ in range(t):
        times.append(publisher.publish("api"))
        time.sleep(gap)
    return times


def matched(frames: list[dict], commits: list[tuple[int, float]]) -> dict[int, dict]:
    """Each notification -> the newest change written before its first receipt (by change id).

    A worker that takes two changes in one batch (the poller, a busy hub) sends one
    notification for both, by design; the older change then has none and is left out."""
    times = [c[1] for c in commits]
    out: dict[int, dict] = {}
    for frame in frames:
        index = bisect.bisect_right(times, frame["first"]) - 1
        if index >= 0:
            out.setdefault(commits[index][0], frame)
    return out


def summary(name: str, request_ms: list[float], frame_lists: list[list[dict]], commits: list[tuple[int, float]],
            listeners: int, **extra: object) -> dict:
    """Request latency, and change written -> first / LAST listener over every listener process."""
    row: dict = {"bench": name, "listeners": listeners, "publishes": len(request_ms),
                 "request_p50_ms": round(statistics.median(request_ms), 1),
                 "request_p99_ms": round(percentile(request_ms, 0.99), 1), **extra}
    per_process = [matched(frames, commits) for frames in frame_lists]
    written = dict(commits)
    complete = [cid for cid, _t in commits if all(cid in m for m in per_process)]
    first = [(min(m[cid]["first"] for m in per_process) - written[cid]) * 1000 for cid in complete]
    last = [(max(m[cid]["last"] for m in per_process) - written[cid]) * 1000 for cid in complete]
    short = sum(1 for cid in complete if sum(m[cid]["count"] for m in per_process) < listeners)
    row.update(changes=len(commits), notified=len(complete), short_notifications=short)
    if last:
        row.update(first_p50_ms=round(statistics.median(first), 1), last_p50_ms=round(statistics.median(last), 1),
                   last_p99_ms=round(percentile(last, 0.99), 1), last_max_ms=round(max(last), 1))
    return row


def one_worker(args: argparse.Namespace, tmp: Path, env: dict[str, str], token: str) -> dict:
    port = free_port()
    server = daphne(env, port, tmp / "one.log")
    try:
        wait_port(port)
        publisher = Publisher(port, token, PASSWORD)
        publishes(publisher, 3, 0.1)  # warm-up: imports and caches
        marker = commit_times(env, 0, last=True)[-1][0]
        listeners = Listeners(port, args.clients)
        time.sleep(1.0)
        request_ms = publishes(publisher, args.triggers, args.gap)
        time.sleep(2.0)  # let a lagging fan-out arrive before the listeners report
        frames = listeners.finish()
    finally:
        stop(server)
    return summary("1 worker", request_ms, [frames], commit_times(env, marker), listeners.ready)


def two_workers(args: argparse.Namespace, tmp: Path, env: dict[str, str], token: str) -> dict:
    env = dict(env, REDIS_URL=args.redis)
    port_a, port_b = free_port(), free_port()
    workers = [daphne(env, port_a, tmp / "a.log", 0), daphne(env, port_b, tmp / "b.log", 1)]
    try:
        wait_port(port_a)
        wait_port(port_b)
        publisher = Publisher(port_b, token, PASSWORD)
        publishes(publisher, 3, 0.1)
        marker = commit_times(env, 0, last=True)[-1][0]
        on_a = Listeners(port_a, args.clients)
        on_b = Listeners(port_b, args.on_b) if args.on_b else None
        time.sleep(1.0)
        request_ms = publishes(publisher, args.triggers, args.gap)
        time.sleep(2.0)
        frames_a = on_a.finish()
        frames_b = on_b.finish() if on_b is not None else []
    finally:
        for worker in workers:
            stop(worker)
    commits = commit_times(env, marker)
    row = summary(f"2 workers over Redis (publish via B, {args.on_b} listeners on B)", request_ms,
                  [frames_a, frames_b] if on_b is not None else [frames_a], commits,
                  on_a.ready + (on_b.ready if on_b is not None else 0))
    row["worker_a_only"] = {k: v for k, v in summary("A", request_ms, [frames_a], commits, on_a.ready).items()
                            if k.startswith(("last", "first", "notified"))}
    return row


def idle(args: argparse.Namespace, tmp: Path, env: dict[str, str], token: str) -> dict:
    port = free_port()
    server = daphne(env, port, tmp / "idle.log")
    try:
        wait_port(port)
        publisher = Publisher(port, token, PASSWORD)
        publishes(publisher, 3, 0.1)
        time.sleep(1.0)
        before = rss_kib(server.pid)
        marker = commit_times(env, 0, last=True)[-1][0]
        sources = -(-args.idle // PER_ADDRESS)
        listeners = Listeners(port, args.idle, sources=sources)
        time.sleep(2.0)
        after = rss_kib(server.pid)
        request_ms = publishes(publisher, args.triggers, max(args.gap, 2.0))  # one fan-out at a time
        time.sleep(5.0)
        frames = listeners.finish()
    finally:
        stop(server)
    return summary(f"1 worker, {args.idle} idle listeners", request_ms, [frames], commit_times(env, marker),
                   listeners.ready, rss_before_mib=round(before / 1024, 1), rss_after_mib=round(after / 1024, 1),
                   kib_per_listener=round((after - before) / max(1, listeners.ready), 1))


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    out = [f"# Notification fan-out, {SERVER}, {time.strftime('%Y-%m-%d %H:%M')} (load average {load})", "",
           f"{args.triggers} REST API publishes per row, {args.gap} s apart (idle row: at least 2 s); "
           "SQLite, 1k+1k entries; times from the change-log write.", "",
           "| setup | listeners | publish request p50 / p99 ms | first p50 ms | LAST p50 ms | LAST p99 ms | "
           "changes notified | memory |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        memory = (f"{r['kib_per_listener']} KiB/listener (RSS {r['rss_before_mib']} -> {r['rss_after_mib']} MiB)"
                  if "kib_per_listener" in r else "")
        notified = f"{r['notified']}/{r['changes']}" + (
            f", {r['short_notifications']} short" if r["short_notifications"] else "")
        out.append(f"| {r['bench']} | {r['listeners']} | {r['request_p50_ms']} / {r['request_p99_ms']} | "
                   f"{r.get('first_p50_ms')} | {r.get('last_p50_ms')} | {r.get('last_p99_ms')} | {notified} | "
                   f"{memory} |")
        if "worker_a_only" in r:
            a = r["worker_a_only"]
            out.append(f"| (the {args.clients} listeners on A, via Redis) | {args.clients} | | "
                       f"{a.get('first_p50_ms')} | {a.get('last_p50_ms')} | {a.get('last_p99_ms')} | "
                       f"{a.get('notified')} | |")
    return "\n".join(out) + "\n"


def peer_comparison(args: argparse.Namespace, base_env: dict[str, str]) -> None:
    """The older side-by-side with the official-SDK peer (shared/bench/notify_latency.py)."""
    port = free_port()
    proc = subprocess.Popen(pinned(0, [PY, "peer_server.py", "--prompts", "1000", "--resources", "1000", "--port",
                                       str(port), "--json-response"]), env=base_env, cwd=SHARED,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    try:
        wait_port(port)
        for mode in ("modern", "legacy"):
            cmd = pinned(1, [PY, str(SHARED / "notify_latency.py"), "--url", f"http://127.0.0.1:{port}/mcp", "--mode",
                             mode, "-k", str(args.clients), "-t", str(args.triggers), "--uri", "docs://doc-00001",
                             "--timeout", "5", "--trigger",
                             f'curl -fsS -o /dev/null -X POST "http://127.0.0.1:{port}/admin/touch?uri=docs://doc-00001"'])
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=600).stdout.strip().splitlines()
            print(f"peer (SDK, uvicorn) {mode}: {out[-1] if out else 'no result'}")
    finally:
        stop(proc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", "--clients", type=int, default=1000, help="listeners per worker in parts 1 and 2")
    ap.add_argument("-n", "--idle", type=int, default=10000, help="idle listeners in part 3 (0: skip)")
    ap.add_argument("-t", "--triggers", type=int, default=30)
    ap.add_argument("--gap", type=float, default=0.3, help="seconds between publishes")
    ap.add_argument("--redis", default=os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/5"))
    ap.add_argument("--skip-two", action="store_true", help="skip part 2 (two workers over Redis)")
    ap.add_argument("--on-b", type=int, default=None, help="listeners on worker B in part 2 (default: -k)")
    ap.add_argument("--peer", action="store_true", help="also run the official-SDK peer comparison")
    ap.add_argument("--server", choices=("daphne", "uvicorn"), default="daphne")
    args = ap.parse_args()
    global SERVER
    SERVER = args.server
    if args.on_b is None:
        args.on_b = args.clients
    raise_open_files()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-notify-"))
    base_env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
                    DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789")
    base_env.pop("REDIS_URL", None)
    env = dict(base_env, DATABASE_URL=f"sqlite:///{tmp}/notify.sqlite3", MEDIA_ROOT=str(tmp / "media"))
    rows: list[dict] = []
    try:
        token = prepare(env)
        rows.append(one_worker(args, tmp, env, token))
        print(json.dumps(rows[-1]), flush=True)
        if not args.skip_two:
            rows.append(two_workers(args, tmp, env, token))
            print(json.dumps(rows[-1]), flush=True)
        if args.idle:
            rows.append(idle(args, tmp, env, token))
            print(json.dumps(rows[-1]), flush=True)
        if args.peer:
            peer_comparison(args, base_env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"notify-{stamp}.json").write_text(json.dumps(rows, indent=1))
    text = markdown(rows, args)
    (out / f"notify-{stamp}.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
