#!/usr/bin/env python3
"""Side-by-side throughput benchmark: this registry vs the official-SDK peer, same run, same data.

Starts each server pinned to CPU 0 and drives it from CPU 1 with the shared load generator
(`../shared/bench/mcp_load.py`, which verifies every reply), at both wire generations:

  ours under uvicorn and under daphne   (registry loaded with `manage.py bench_load`)
  peer under uvicorn                    (`../shared/bench/peer_server.py --json-response`)
  trivial ASGI app under uvicorn/daphne (the per-process ceiling)

Prints a Markdown table with ratios and writes the raw JSON lines to bench/results/.
Usage: .venv/bin/python bench/run.py [--duration 10] [--concurrency 32] [--prompts 1000 --resources 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("MCP_SHARED_BENCH", ROOT.parent / "shared" / "bench"))
PY = sys.executable


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pinned(cpu: int, cmd: list[str]) -> list[str]:
    pin = shutil.which("taskset") and os.cpu_count() and os.cpu_count() > 1
    return (["taskset", "-c", str(cpu)] if pin else []) + cmd


def wait_port(port: int, timeout: float = 60.0) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"server on port {port} did not start")


def start(cmd: list[str], env: dict[str, str], cwd: Path, log: Path) -> subprocess.Popen:
    return subprocess.Popen(pinned(0, cmd), env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT)


def load(url: str, mode: str, args: argparse.Namespace, pid: int) -> dict:
    cmd = pinned(1, [PY, str(SHARED / "mcp_load.py"), "--url", url, "--mode", mode, "-c", str(args.concurrency),
                     "-d", str(args.duration), "--warmup", str(args.warmup), "--prompts", str(args.prompts),
                     "--resources", str(args.resources), "--server-pid", str(pid)])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.duration + args.warmup + 60)
    line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "{}"
    result = json.loads(line)
    if out.returncode != 0 and not result:
        result = {"rps": 0, "errors": -1, "error_samples": [out.stderr[-500:]]}
    return result


def p99(result: dict) -> float:
    return max((op.get("p99_ms", 0.0) for op in result.get("ops", {}).values()), default=0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--resources", type=int, default=1000)
    ap.add_argument("--only", default="", help="comma-separated target names to run")
    args = ap.parse_args()
    if not (SHARED / "mcp_load.py").exists():
        sys.exit(f"bench: {SHARED} not found (set MCP_SHARED_BENCH)")

    tmp = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp}/bench.sqlite3", MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0",
               ALLOWED_HOSTS="127.0.0.1,localhost", DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789")
    env.pop("REDIS_URL", None)
    subprocess.run([PY, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    t0 = time.time()
    subprocess.run([PY, "manage.py", "bench_load", "--prompts", str(args.prompts), "--resources", str(args.resources)],
                   cwd=ROOT, env=env, check=True)
    print(f"bench_load: {time.time() - t0:.1f}s", file=sys.stderr)

    uvicorn = ["-m", "uvicorn", "--host", "127.0.0.1", "--loop", "uvloop", "--http", "httptools",
               "--no-access-log", "--log-level", "warning", "--backlog", "4096"]
    targets = {
        "ours-uvicorn": (lambda p: [PY, *uvicorn, "--port", str(p), "config.asgi:application"], ROOT,
                         ("modern", "legacy")),
        "ours-daphne": (lambda p: [PY, "-m", "daphne", "-v", "0", "-e",
                                   f"tcp:port={p}:interface=127.0.0.1:backlog=4096", "config.asgi:application"],
                        ROOT, ("modern", "legacy")),
        "peer-uvicorn": (lambda p: [PY, "peer_server.py", "--prompts", str(args.prompts), "--resources",
                                    str(args.resources), "--port", str(p), "--json-response"],
                         SHARED, ("modern", "legacy")),
        "trivial-uvicorn": (lambda p: [PY, *uvicorn, "--port", str(p), "trivial_asgi:app"], SHARED, ("raw",)),
        "trivial-daphne": (lambda p: [PY, "-m", "daphne", "-v", "0", "-e",
                                      f"tcp:port={p}:interface=127.0.0.1:backlog=4096", "trivial_asgi:app"],
                           SHARED, ("raw",)),
    }
    only = {t for t in args.only.split(",") if t}
    results: dict[tuple[str, str], dict] = {}
    outdir = ROOT / "bench" / "results"
    outdir.mkdir(parents=True, exist_ok=True)
    raw_path = outdir / f"throughput-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    for name, (command, cwd, modes) in targets.items():
        if only and name not in only:
            continue
        port = free_port()
        proc = start(command(port), env, cwd, tmp / f"{name}.log")
        try:
            wait_port(port)
            url = f"http://127.0.0.1:{port}/" if modes == ("raw",) else f"http://127.0.0.1:{port}/mcp"
            for mode in modes:
                result = load(url, mode, args, proc.pid)
                results[(name, mode)] = result
                with raw_path.open("a") as f:
                    f.write(json.dumps({"target": name, **result}) + "\n")
                print(f"{name:16s} {mode:7s} {result.get('rps', 0):9.1f} req/s  errors {result.get('errors')}  "
                      f"p99 {p99(result):.1f} ms", file=sys.stderr)
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def rps(name: str, mode: str) -> float:
        return results.get((name, mode), {}).get("rps", 0.0)

    print("\n| server | generation | req/s | errors | p99 ms | vs peer (uvicorn) | vs trivial app, same server |")
    print("|---|---|---|---|---|---|---|")
    for (name, mode), result in results.items():
        peer = rps("peer-uvicorn", mode) if mode != "raw" else 0
        server = name.split("-")[1]
        trivial = rps(f"trivial-{server}", "raw")
        vs_peer = f"{result['rps'] / peer:.2f}x" if peer and name.startswith("ours") else ""
        vs_trivial = f"{100 * result['rps'] / trivial:.0f}%" if trivial and not name.startswith("trivial") else ""
        print(f"| {name} | {mode} | {result.get('rps', 0):.0f} | {result.get('errors')} | {p99(result):.1f} | "
              f"{vs_peer} | {vs_trivial} |")
    print(f"\nraw results: {raw_path.relative_to(ROOT)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
