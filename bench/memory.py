#!/usr/bin/env python3
"""Memory: a warm worker's RSS and USS by registry size, this checkout against a baseline, same run.

For each size N (default 0, 1k, 5k, 20k; N prompts + N resources from `manage.py bench_load`
into a fresh SQLite database, loaded once and served by both checkouts, whose migrations must
agree): start one real server process of the BASELINE code (default: a detached `git worktree`
of `main`, removed afterwards; or --baseline PATH), then one of this checkout, on that database;
warm each the same way (a `prompts/get` that waits for the catalog build, every page of
`prompts/list`, `resources/list` and `resources/templates/list`, 200 `prompts/get` and 200
`resources/read`, the lists again), then read /proc/<pid>/status (VmRSS, RssAnon) and
/proc/<pid>/smaps_rollup (USS = private clean + dirty). Size 0 is the floor: an empty registry,
every module imported, nothing held. The slope is (RSS at the largest size - RSS at the
smallest non-zero one) / the entries between them, in KiB per entry (one entry = one prompt or
one resource).

  .venv/bin/python bench/memory.py [--sizes 0,1000,5000,20000] [--server daphne,uvicorn]
                                   [--baseline PATH | --no-baseline]

Writes JSON lines and a Markdown summary to bench/results/.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, pinned, wait_port
from scale import call

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable


def manage(code: Path, env: dict[str, str], *args: str) -> None:
    done = subprocess.run([PY, "manage.py", *args], cwd=code, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")


def memory_of(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon and USS of `pid` in MiB, from /proc."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("VmRSS", "RssAnon"):
            out[name] = int(rest.split()[0]) / 1024
    private = 0
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in ("Private_Clean", "Private_Dirty"):
            private += int(rest.split()[0])
    out["USS"] = private / 1024
    return {k: round(v, 1) for k, v in out.items()}


def server_command(server: str, port: int) -> list[str]:
    if server == "daphne":  # as `make run` starts it
        return [PY, "-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", str(port), "config.asgi:application"]
    return [PY, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)]


def all_pages(conn: http.client.HTTPConnection, method: str) -> int:
    cursor, count = None, 0
    while True:
        result, _ = call(conn, method, {"cursor": cursor} if cursor else {})
        count += len(result.get("prompts") or result.get("resources") or result.get("resourceTemplates") or ())
        cursor = result.get("nextCursor")
        if not cursor:
            return count


def warm(conn: http.client.HTTPConnection, size: int) -> dict[str, int]:
    listed: dict[str, int] = {}
    if size:
        call(conn, "prompts/get", {"name": "prompt-00000", "arguments": {"topic": "t", "audience": "a"}})
    for method in ("prompts/list", "resources/list", "resources/templates/list"):
        listed[method] = all_pages(conn, method)
    for i in range(200 if size else 0):
        call(conn, "prompts/get", {"name": f"prompt-{i * 7 % size:05d}", "arguments": {"topic": "t", "audience": "a"}})
        call(conn, "resources/read", {"uri": f"docs://doc-{i * 13 % size:05d}"})
    for method in ("prompts/list", "resources/list", "resources/templates/list"):
        all_pages(conn, method)
    return listed


def measure(code: Path, name: str, server: str, size: int, env: dict[str, str], log: Path) -> dict:
    port = free_port()
    proc = subprocess.Popen(pinned(0, server_command(server, port)), env=env, cwd=code,
                            stdout=log.open("w"), stderr=subprocess.STDOUT)
    row: dict = {"bench": "memory", "code": name, "server": server, "entries": size}
    try:
        wait_port(port)
        time.sleep(1.0)
        row["idle"] = memory_of(proc.pid)
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        row["listed"] = warm(conn, size)
        time.sleep(1.0)
        row["warm"] = memory_of(proc.pid)
    finally:
        proc.terminate()
        proc.wait(15)
    print(json.dumps(row), flush=True)
    return row


def slope(rows: list[dict], code: str, server: str, field: str) -> float | None:
    points = sorted((r["entries"], r["warm"][field]) for r in rows
                    if r["code"] == code and r["server"] == server and r["entries"])
    if len(points) < 2 or points[-1][0] == points[0][0]:
        return None
    (n0, m0), (n1, m1) = points[0], points[-1]
    return round((m1 - m0) * 1024 / (2 * (n1 - n0)), 2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="0,1000,5000,20000")
    ap.add_argument("--server", default="daphne", help="daphne, uvicorn or both (comma-separated)")
    ap.add_argument("--baseline", type=Path, help="a checkout of the baseline code (default: a worktree of main)")
    ap.add_argument("--no-baseline", action="store_true", help="measure this checkout only")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-memory-"))
    env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789", MEDIA_ROOT=str(tmp / "media"))
    env.pop("REDIS_URL", None)
    codes: list[tuple[str, Path]] = []
    made_worktree = False
    if not args.no_baseline:
        baseline = args.baseline
        if baseline is None:
            baseline, made_worktree = tmp / "baseline", True
            subprocess.run(["git", "worktree", "add", "--detach", str(baseline), "main"], cwd=ROOT, check=True,
                           capture_output=True)
        codes.append(("baseline", baseline))
    codes.append(("this", ROOT))
    servers = [s.strip() for s in args.server.split(",") if s.strip()]
    rows: list[dict] = []
    try:
        for size in (int(s) for s in args.sizes.split(",") if s):
            db = tmp / f"memory-{size}.sqlite3"
            size_env = dict(env, DATABASE_URL=f"sqlite:///{db}")
            manage(ROOT, size_env, "migrate", "--noinput")
            if size:
                manage(ROOT, size_env, "bench_load", "--prompts", str(size), "--resources", str(size))
            for server in servers:
                for name, code in codes:
                    rows.append(measure(code, name, server, size, size_env, tmp / f"{name}-{server}-{size}.log"))
    finally:
        if made_worktree:
            subprocess.run(["git", "worktree", "remove", "--force", str(tmp / "baseline")], cwd=ROOT,
                           capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"memory-{stamp}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    lines = ["| code | server | prompts+resources | RSS idle MiB | RSS warm MiB | RssAnon warm | USS warm |",
             "|---|---|---|---|---|---|---|"]
    lines += [f"| {r['code']} | {r['server']} | {r['entries']}+{r['entries']} | {r['idle']['VmRSS']} | "
              f"{r['warm']['VmRSS']} | {r['warm']['RssAnon']} | {r['warm']['USS']} |" for r in rows]
    lines += ["", "| code | server | KiB per entry (RSS) | KiB per entry (USS) |", "|---|---|---|---|"]
    lines += [f"| {name} | {server} | {slope(rows, name, server, 'VmRSS')} | {slope(rows, name, server, 'USS')} |"
              for server in servers for name, _ in codes]
    text = f"# Memory, {time.strftime('%Y-%m-%d %H:%M')}\n\n" + "\n".join(lines) + "\n"
    (out / f"memory-{stamp}.md").write_text(text)
    print("\n" + text)


if __name__ == "__main__":
    main()
