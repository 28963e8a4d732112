#!/usr/bin/env python3
"""Announcements lost: publishes that some listener never heard, with list readers looping.

Why: a reliability review found publishes announced to NO listener while clients looped list
requests (one daphne worker, SQLite, 1k+1k, 20 listen streams, 40 publishes 0.3 s apart, 16-24
readers: 8-12 of 40 lost; PostgreSQL: 11 of 60 with 4 readers, 35 of 60 with 8). A list request
after a commit rebuilt the whole catalog, and when that rebuild had read a later commit before an
earlier commit's delivery, the hub took it as its baseline and the later change reached nobody
(fixed in 95001c2: the hub keeps its own record of what each label's listeners were told,
mcp_endpoint/notify/diff.py `Told`). This bench counts the loss, so it stays at zero.

Per row: K `subscriptions/listen` streams (2026-07-28, bench/listeners.py --by-uri, one process
on CPU 1) subscribed to N resources; R clients (bench/readers.py, CPU 1) looping prompts/list,
resources/list and resources/templates/list; then N publishes through the REST import
(POST /api/v1/import/?publish=true), publish i changing the i-th of those resources, so every
notification names the publish it announces (two changes taken in one batch still send one
`notifications/resources/updated` each).

The publishes start --gap s apart on a fixed schedule (start to start), up to --publishers at
once on their own connections (several operators or CI jobs), so a publish slowed by the list
traffic does not push the later ones back. The race needs a delivery still pending when the
next publish commits: the hub delivers a request's change once its response is out
(mcp_endpoint/notify/handoff.py), and meanwhile the next publish can commit and a list request's
rebuild read it. With --publishers 1 (one connection: a publish also waits for the previous
answer) the old code still lost 11 and 22 of 40 (SQLite, 16 and 32 readers) and 13 of 40
(PostgreSQL, 16 readers); a first version that paused a full --gap after each answer, as
bench/notify.py does, lost none (SQLite 16 and 32 readers, PostgreSQL 8, a quieter machine):
each delivery was done before the next commit, so that schedule under-counts.

A listener heard publish i if the update for its URI arrived within --deadline s of the
change-log row's `created_at` (written inside the publishing transaction, a hair before its
commit). Reported per row: "lost" = publishes some listener did not hear, "unheard" =
publishes NO listener heard (the review's figure), "missing" = listener-notifications missing
in all, "late" = updates that came after the deadline, p50/p99 change written -> LAST listener
over the publishes every listener heard, the readers' request rate, and the servers' delivery
log lines "changes [...]: 0 notifications queued for K listeners" with K > 0 (the hub judged a
change to announce nothing while listeners were open).

Setups: one daphne worker (CPU 0); two workers over Redis (--redis; A on CPU 0, B on CPU 1),
listeners and readers split over both, publishes through B. Every row starts fresh servers on
one database prepared once (migrate, bench_load 1k+1k): SQLite in a temporary file by default,
or with --database-url postgres://USER@HOST:PORT/ANY a database of its own created on that
server and dropped afterwards. Server logs (LOG_LEVEL=INFO) of a row that lost anything (or
all, --keep-logs) are kept beside the results.

  .venv/bin/python bench/lost.py                                    # 1 and 2 workers, SQLite
  .venv/bin/python bench/lost.py --workers 1 --readers 0,8,16 \\
      --database-url postgres://postgres@127.0.0.1:5432/test          # PostgreSQL
  options: -k 20 -n 40 --gap 0.3 --publishers 4 --deadline 5 --readers 0,8,16,32 --workers 1,2
           --redis URL --keep-logs

Writes bench/results/lost-<time>.{jsonl,md} (and lost-<time>-<row>.log for rows that lost).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, pinned, wait_port
from writes import PASSWORD, Publisher, manage, percentile, prepare

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
FIRST_DOC = 100  # docs://doc-00100 onwards are published; doc-00001 takes the warm-up publishes


class Held:
    """A helper process on CPU 1 (bench/listeners.py, bench/readers.py) that prints {"ready": n}
    first and its report as the last line when stdin closes."""

    def __init__(self, script: str, *args: str) -> None:
        self.proc = subprocess.Popen(pinned(1, [PY, str(ROOT / "bench" / script), *args]),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            sys.exit(f"{script} did not start")
        self.ready: int = json.loads(line)["ready"]

    def finish(self) -> dict:
        out, _ = self.proc.communicate(input="", timeout=120)  # stdin closed: it reports and exits
        lines = out.strip().splitlines()
        return json.loads(lines[-1]) if lines else {}


def database(url: str | None) -> tuple[str, Callable[[], None]]:
    """(DATABASE_URL for the run, a cleanup): a temporary SQLite file, or a fresh PostgreSQL database."""
    if not url:
        folder = Path(tempfile.mkdtemp(prefix="mcp-lost-"))
        return f"sqlite:///{folder}/lost.sqlite3", lambda: shutil.rmtree(folder, ignore_errors=True)
    import psycopg

    admin = psycopg.connect(url, autocommit=True, connect_timeout=5)
    name = f"mcp_lost_{uuid.uuid4().hex[:10]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(url)

    def drop() -> None:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()

    return urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment)), drop


def changes_written(env: dict[str, str], after: int) -> tuple[int, dict[str, float]]:
    """(newest change-log id, {resource key: created_at epoch of its first change after `after`})."""
    code = ("import json; from registry.models import ChangeLogEntry as C; "
            f"rows = C.objects.filter(id__gt={after}).order_by('id')"
            ".values_list('id', 'entry_key', 'created_at'); "
            "last = C.objects.order_by('-id').values_list('id', flat=True).first() or 0; "
            "print(json.dumps([last, [[k, t.timestamp()] for _i, k, t in rows]]))")
    last, rows = json.loads(manage(env, "shell", "-v", "0", "-c", code).strip().splitlines()[-1])
    written: dict[str, float] = {}
    for key, at in rows:
        written.setdefault(key, at)
    return last, written


def server(env: dict[str, str], port: int, log: Path, cpu: int) -> subprocess.Popen:
    cmd = [PY, "-m", "daphne", "-v", "0", "-e", f"tcp:port={port}:interface=127.0.0.1:backlog=4096",
           "config.asgi:application"]
    return subprocess.Popen(pinned(cpu, cmd), env=env, cwd=ROOT, stdout=log.open("w"),
                            stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def silent_batches(log: Path) -> int:
    """The server's delivery lines that queued nothing while listeners were open."""
    text = log.read_text(errors="replace")
    return sum(1 for found in re.finditer(r": 0 notifications queued for (\d+) listeners", text)
               if int(found.group(1)))


def scheduled(pool: queue.Queue[Publisher], uris: list[str], gap: float, size: int) -> list[float]:
    """Publish uris[i] at start + i * gap, whether or not earlier publishes have been answered
    (up to `size` at once); each request's latency in ms."""

    def one(uri: str) -> float:
        publisher = pool.get()
        try:
            return publisher.publish("import", uri)
        finally:
            pool.put(publisher)

    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=size) as executor:
        futures = []
        for i, uri in enumerate(uris):
            time.sleep(max(0.0, start + i * gap - time.monotonic()))
            futures.append(executor.submit(one, uri))
        return [future.result() for future in futures]


@dataclass
class Setup:
    workers: int
    database: str  # "sqlite" or "postgresql"
    env: dict[str, str]
    token: str


def one_row(args: argparse.Namespace, setup: Setup, readers: int, row: int,
            tmp: Path) -> tuple[dict, list[Path]]:
    ports = [free_port() for _ in range(setup.workers)]
    logs = [tmp / f"row{row}-worker{i}.log" for i in range(setup.workers)]
    procs = [server(setup.env, port, log, cpu=i)
             for i, (port, log) in enumerate(zip(ports, logs, strict=True))]
    try:
        for port in ports:
            wait_port(port)
        pool: queue.Queue[Publisher] = queue.Queue()
        for i in range(args.publishers):  # through B when there are two; own connection each
            publisher = Publisher(ports[-1], setup.token, PASSWORD)
            publisher.n = 1000 * (i + 1)  # texts of different publishers never coincide
            pool.put(publisher)
        for _ in range(3):  # warm-up: imports, caches, the catalog
            publisher.publish("import")
        uris = [f"docs://doc-{FIRST_DOC + (row * args.publishes + i) % 800:05d}"
                for i in range(args.publishes)]
        marker, _ = changes_written(setup.env, 0)
        per_worker = [args.listeners // setup.workers + (i < args.listeners % setup.workers)
                      for i in range(setup.workers)]
        listeners = [Held("listeners.py", "--port", str(port), "-k", str(k), "--uris", ",".join(uris),
                          "--by-uri") for port, k in zip(ports, per_worker, strict=True) if k]
        load = Held("readers.py", "-r", str(readers), *(f"--port={p}" for p in ports)) if readers else None
        time.sleep(1.0)  # the readers under way
        request_ms = scheduled(pool, uris, args.gap, args.publishers)
        time.sleep(args.deadline + 1.0)
        streams = [s for held in listeners for s in held.finish()["streams"]]
        read = load.finish() if load is not None else {}
    finally:
        for proc in procs:
            stop(proc)
    _, written = changes_written(setup.env, marker)
    k = sum(h.ready for h in listeners)
    heard, late, last_ms = [], 0, []
    for uri in uris:
        at = written.get(uri)
        times = [min(s[uri]) for s in streams if uri in s]
        in_time = [t for t in times if at is not None and t - at <= args.deadline]
        late += len(times) - len(in_time)
        heard.append(len(in_time))
        if at is not None and len(in_time) == k:
            last_ms.append((max(in_time) - at) * 1000)
    result = {
        "bench": "lost", "workers": setup.workers, "database": setup.database, "readers": readers,
        "listeners": k, "publishes": len(uris), "changes_found": sum(u in written for u in uris),
        "lost": sum(1 for h in heard if h < k), "unheard": sum(1 for h in heard if h == 0),
        "missing": sum(k - h for h in heard), "late": late,
        "last_p50_ms": round(statistics.median(last_ms), 1) if last_ms else None,
        "last_p99_ms": round(percentile(last_ms, 0.99), 1) if last_ms else None,
        "request_p50_ms": round(statistics.median(request_ms), 1),
        "reader_rps": round(read["requests"] / read["seconds"], 1) if read.get("seconds") else 0,
        "reader_errors": read.get("errors", 0), "silent_batches": sum(silent_batches(log) for log in logs),
        "load": round(os.getloadavg()[0], 2),
    }
    if read.get("error_samples"):
        result["reader_error_samples"] = read["error_samples"]
    return result, logs


def markdown(rows: list[dict], args: argparse.Namespace, load: str) -> str:
    out = [f"# Announcements lost under list traffic, {time.strftime('%Y-%m-%d %H:%M')}", "",
           f"{args.listeners} listen streams, {args.publishes} REST-import publishes started {args.gap} s "
           f"apart (at most {args.publishers} at once; each a different subscribed resource), deadline "
           f"{args.deadline} s from the change-log write; 1k+1k entries; two workers: listeners and readers "
           f"split, publishes through B (Redis). Load average at the start: {load}.", "",
           "| workers | database | readers | publishes | lost | unheard | missing notifications | late | "
           "p50 / p99 ms commit -> last listener | reader req/s (errors) | 0-notification batches |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r['workers']} | {r['database']} | {r['readers']} | {r['publishes']} | {r['lost']} | "
                   f"{r['unheard']} | {r['missing']} of {r['publishes'] * r['listeners']} | {r['late']} | "
                   f"{r['last_p50_ms']} / {r['last_p99_ms']} | {r['reader_rps']} ({r['reader_errors']}) | "
                   f"{r['silent_batches']} |")
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", "--listeners", type=int, default=20)
    ap.add_argument("-n", "--publishes", type=int, default=40)
    ap.add_argument("--gap", type=float, default=0.3, help="seconds between publishes")
    ap.add_argument("--publishers", type=int, default=4,
                    help="connections publishing at once at most (1: each publish waits for the previous)")
    ap.add_argument("--deadline", type=float, default=5.0, help="seconds from the change to count it heard")
    ap.add_argument("--readers", default="0,8,16,32", help="comma-separated reader counts, one row each")
    ap.add_argument("--workers", default="1,2", help="1 (one daphne worker), 2 (two over Redis), or both")
    ap.add_argument("--database-url", default="",
                    help="postgres://... server to create a throwaway database on (default: SQLite)")
    ap.add_argument("--keep-logs", action="store_true",
                    help="keep every row's server logs, not only those that lost")
    ap.add_argument("--redis", default=os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379/11"))
    args = ap.parse_args()
    url, cleanup = database(args.database_url or None)
    tmp = Path(tempfile.mkdtemp(prefix="mcp-lost-logs-"))
    env = dict(os.environ, DATABASE_URL=url, MEDIA_ROOT=str(tmp / "media"), MCP_ALLOW_ANONYMOUS="1",
               DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost", LOG_LEVEL="INFO",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789")
    env.pop("REDIS_URL", None)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    started_load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    rows: list[dict] = []
    try:
        token = prepare(env)
        kind = "postgresql" if url.startswith("postgres") else "sqlite"
        for workers in [int(w) for w in args.workers.split(",")]:
            setup = Setup(workers, kind, dict(env, REDIS_URL=args.redis) if workers > 1 else env, token)
            for readers in [int(r) for r in args.readers.split(",")]:
                row, logs = one_row(args, setup, readers, len(rows), tmp)
                rows.append(row)
                print(json.dumps(row), flush=True)
                if row["lost"] or row["late"] or args.keep_logs:
                    kept = out / f"lost-{stamp}-row{len(rows)}.log"
                    kept.write_text("".join(f"=== {log.name}\n{log.read_text(errors='replace')}"
                                            for log in logs))
    finally:
        cleanup()
        shutil.rmtree(tmp, ignore_errors=True)
    (out / f"lost-{stamp}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = markdown(rows, args, started_load)
    (out / f"lost-{stamp}.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
