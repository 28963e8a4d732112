#!/usr/bin/env python3
"""Side-by-side throughput benchmark: this registry vs the official-SDK peer, same run, same data.

Starts each server pinned to CPU 0 and drives it from CPU 1 with the shared load generator
(`../shared/bench/mcp_load.py`, which verifies every reply), at both wire generations:

  trivial ASGI app under uvicorn/daphne (the per-process ceiling: a fixed reply to every POST)
  the floor under uvicorn (bench/floor_asgi.py: prompts/get and resources/read with nothing checked)
  ours under uvicorn (the mixed workload, then prompts/get alone and resources/read alone)
  peer under uvicorn                    (`../shared/bench/peer_server.py --json-response`)
  ours under daphne                     (registry loaded with `manage.py bench_load`)

Each server is measured right after the ones it is compared with, so that a change in the
machine's load moves both sides of a ratio alike. Prints the Markdown the README's Benchmarks
section holds (ratios first, then the conditions: machine, load average before and after, what
else used the CPU, date, versions) and writes the raw JSON lines to bench/results/.
Usage: .venv/bin/python bench/run.py [--duration 10] [--concurrency 32] [--prompts 1000 --resources 1000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import conditions

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


def load(url: str, mode: str, args: argparse.Namespace, pid: int, mix: str | None = None) -> dict:
    cmd = pinned(1, [PY, str(SHARED / "mcp_load.py"), "--url", url, "--mode", mode, "-c", str(args.concurrency),
                     "-d", str(args.duration), "--warmup", str(args.warmup), "--prompts", str(args.prompts),
                     "--resources", str(args.resources), "--server-pid", str(pid)]
                 + (["--mix", mix] if mix else []))
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.duration + args.warmup + 60)
    line = out.stdout.strip().splitlines()[-1] if out.stdout.strip() else "{}"
    result = json.loads(line)
    if out.returncode != 0 and not result:
        result = {"rps": 0, "errors": -1, "error_samples": [out.stderr[-500:]]}
    return result


def p99(result: dict) -> float:
    return max((op.get("p99_ms", 0.0) for op in result.get("ops", {}).values()), default=0.0)


# What each run is called in the table: (target, run) -> mcp_load mode and --mix.
RUNS = {
    "mixed-modern": ("modern", None), "mixed-legacy": ("legacy", None),
    "get": ("modern", "get=1"), "read": ("modern", "read=1"), "raw": ("raw", None),
}
MIX = "prompts/list 1, prompts/get 4, resources/read 4, resources/templates/list 1"


def targets(args: argparse.Namespace) -> dict[str, tuple]:
    uvicorn = ["-m", "uvicorn", "--host", "127.0.0.1", "--loop", "uvloop", "--http", "httptools",
               "--no-access-log", "--log-level", "warning", "--backlog", "4096"]

    def daphne(p: int, app: str) -> list[str]:
        return [PY, "-m", "daphne", "-v", "0", "-e", f"tcp:port={p}:interface=127.0.0.1:backlog=4096", app]

    # Ours on uvicorn is started the way production starts it (manage.py serve, one worker).
    return {
        "trivial-uvicorn": (lambda p: [PY, *uvicorn, "--port", str(p), "trivial_asgi:app"], SHARED, ("raw",)),
        # The floor of any Python MCP server here: parse, look up, render, encode, nothing checked.
        "floor-uvicorn": (lambda p: [PY, *uvicorn, "--port", str(p), "--app-dir", str(ROOT / "bench"),
                                     "floor_asgi:app"], ROOT, ("get", "read")),
        "ours-uvicorn": (lambda p: [PY, "manage.py", "serve", "--workers", "1", "--port", str(p)], ROOT,
                         ("get", "read", "mixed-modern", "mixed-legacy")),
        "peer-uvicorn": (lambda p: [PY, "peer_server.py", "--prompts", str(args.prompts), "--resources",
                                    str(args.resources), "--port", str(p), "--json-response"],
                         SHARED, ("mixed-modern", "mixed-legacy")),
        "ours-daphne": (lambda p: daphne(p, "config.asgi:application"), ROOT, ("mixed-modern", "mixed-legacy")),
        "trivial-daphne": (lambda p: daphne(p, "trivial_asgi:app"), SHARED, ("raw",)),
    }


def measure(args: argparse.Namespace, env: dict[str, str], tmp: Path, raw_path: Path) -> dict[tuple[str, str], list]:
    """Every target's runs, ``--rounds`` times over: a ratio is taken within a round (both sides
    measured minutes apart at most) and the table gives each figure's median over the rounds."""
    only = {t for t in args.only.split(",") if t}
    results: dict[tuple[str, str], list[dict]] = {}
    for round_no in range(args.rounds):
        for name, (command, cwd, runs) in targets(args).items():
            if only and name not in only:
                continue
            port = free_port()
            proc = start(command(port), env, cwd, tmp / f"{name}.log")
            try:
                wait_port(port)
                url = f"http://127.0.0.1:{port}/" if runs == ("raw",) else f"http://127.0.0.1:{port}/mcp"
                for run in runs:
                    mode, mix = RUNS[run]
                    # manage.py serve with one worker serves in its own process (uvicorn.run does
                    # not fork for one worker; taskset execs into python), so this is the server.
                    result = load(url, mode, args, proc.pid, mix)
                    results.setdefault((name, run), []).append(result)
                    with raw_path.open("a") as f:
                        f.write(json.dumps({"target": name, "run": run, "round": round_no, **result}) + "\n")
                    print(f"{name:16s} {run:12s} {result.get('rps', 0):9.1f} req/s  errors {result.get('errors')}  "
                          f"p99 {p99(result):.1f} ms  server CPU {result.get('server_cpu_pct')}%  "
                          f"client CPU {result.get('client_cpu_pct')}%", file=sys.stderr)
            finally:
                proc.terminate()
                try:
                    proc.wait(15)
                except subprocess.TimeoutExpired:
                    proc.kill()
    return results


def median(values: list[float]) -> float:
    return statistics.median(values) if values else 0.0


def report(results: dict, before: dict[str, str], after: dict[str, str], args: argparse.Namespace) -> str:
    def rounds(name: str, run: str) -> list[dict]:
        return results.get((name, run), [])

    def rps(name: str, run: str) -> float:
        return median([float(x.get("rps", 0.0)) for x in rounds(name, run)])

    def ratio_range(name: str, run: str, peer: str) -> str:
        ratios = sorted(a.get("rps", 0) / b["rps"] for a, b in zip(rounds(name, run), rounds(peer, run), strict=False)
                        if b.get("rps"))
        if not ratios:
            return ""
        spread = f" ({ratios[0]:.2f}-{ratios[-1]:.2f}x over {len(ratios)} rounds)" if len(ratios) > 1 else ""
        return f"{median(ratios):.2f}x the peer{spread}, "

    def cell(name: str, run: str) -> str:
        if not rounds(name, run):
            return "not run"
        errors = sum(x.get("errors") or 0 for x in rounds(name, run))
        ratio = "" if name == "peer-uvicorn" else ratio_range(name, run, "peer-uvicorn")
        return f"{ratio}{rps(name, run):,.0f} req/s" + (f", {errors} errors" if errors else "")

    def lat(name: str, run: str) -> str:
        return f"{median([p99(x) for x in rounds(name, run)]):.1f}" if rounds(name, run) else "-"

    def per_cpu(name: str, run: str) -> float:
        """Requests per second of the server's own CPU time: what a request costs, which moves less
        than req/s when other work takes turns on the server's core."""
        got = [x["rps"] * 100 / x["server_cpu_pct"] for x in rounds(name, run) if x.get("server_cpu_pct")]
        return median(got)

    def cost(name: str) -> str:
        """Requests per second of server CPU at both generations, and their ratio to the peer's."""
        cells = []
        for run in ("mixed-modern", "mixed-legacy"):
            mine, peer = per_cpu(name, run), per_cpu("peer-uvicorn", run)
            ratio = f" ({mine / peer:.2f}x)" if peer and mine and name != "peer-uvicorn" else ""
            cells.append(f"{mine:,.0f}{ratio}" if mine else "-")
        return " / ".join(cells)

    def cpu(name: str, run: str) -> str:
        got = [x["server_cpu_pct"] for x in rounds(name, run) if x.get("server_cpu_pct") is not None]
        return f"{median(got):.0f}%" if got else "-"

    tu, td = rps("trivial-uvicorn", "raw"), rps("trivial-daphne", "raw")
    cu = per_cpu("trivial-uvicorn", "raw")
    lines = [
        f"Mixed workload ({MIX}; {args.prompts:,} prompts and {args.resources:,} resources; "
        f"{args.concurrency} connections; {args.duration:g} s after {args.warmup:g} s of warm-up, median of "
        f"{args.rounds} round(s); every reply verified; one worker each, server on CPU 0, load generator on CPU 1):",
        "",
        "| server | 2026-07-28 | 2025-11-25 | per second of server CPU (07-28 / 11-25) | p99 ms | server CPU |",
        "| --- | --- | --- | --- | --- | --- |",
        f"| this registry, uvicorn (`manage.py serve`) | {cell('ours-uvicorn', 'mixed-modern')} | "
        f"{cell('ours-uvicorn', 'mixed-legacy')} | {cost('ours-uvicorn')} | {lat('ours-uvicorn', 'mixed-modern')} / "
        f"{lat('ours-uvicorn', 'mixed-legacy')} | {cpu('ours-uvicorn', 'mixed-modern')} / "
        f"{cpu('ours-uvicorn', 'mixed-legacy')} |",
        f"| this registry, daphne (`make run`) | {cell('ours-daphne', 'mixed-modern')} | "
        f"{cell('ours-daphne', 'mixed-legacy')} | {cost('ours-daphne')} | {lat('ours-daphne', 'mixed-modern')} / "
        f"{lat('ours-daphne', 'mixed-legacy')} | {cpu('ours-daphne', 'mixed-modern')} / "
        f"{cpu('ours-daphne', 'mixed-legacy')} |",
        f"| official-SDK peer, uvicorn | {cell('peer-uvicorn', 'mixed-modern')} | "
        f"{cell('peer-uvicorn', 'mixed-legacy')} | {cost('peer-uvicorn')} | {lat('peer-uvicorn', 'mixed-modern')} / "
        f"{lat('peer-uvicorn', 'mixed-legacy')} | {cpu('peer-uvicorn', 'mixed-modern')} / "
        f"{cpu('peer-uvicorn', 'mixed-legacy')} |",
        "",
        "One method at a time at 2026-07-28, against the trivial app's ceiling on the same server (a fixed "
        "JSON-RPC reply to every POST, nothing parsed):",
        "",
        "| server | prompts/get | resources/read | ceiling (trivial app) | p99 ms (get / read) |",
        "| --- | --- | --- | --- | --- |",
        f"| uvicorn, one worker | {pct(rps('ours-uvicorn', 'get'), tu)} ({rps('ours-uvicorn', 'get'):,.0f} req/s) | "
        f"{pct(rps('ours-uvicorn', 'read'), tu)} ({rps('ours-uvicorn', 'read'):,.0f} req/s) | {tu:,.0f} req/s | "
        f"{lat('ours-uvicorn', 'get')} / {lat('ours-uvicorn', 'read')} |",
        f"| the floor, uvicorn (`bench/floor_asgi.py`: parse, look up, render, encode; nothing checked, "
        f"counted or cached) | {pct(rps('floor-uvicorn', 'get'), tu)} ({rps('floor-uvicorn', 'get'):,.0f} req/s) | "
        f"{pct(rps('floor-uvicorn', 'read'), tu)} ({rps('floor-uvicorn', 'read'):,.0f} req/s) | | "
        f"{lat('floor-uvicorn', 'get')} / {lat('floor-uvicorn', 'read')} |",
        f"| this registry against the floor | {pct(rps('ours-uvicorn', 'get'), rps('floor-uvicorn', 'get'))} | "
        f"{pct(rps('ours-uvicorn', 'read'), rps('floor-uvicorn', 'read'))} | | |",
        f"| the same, per second of the server's CPU | {pct(per_cpu('ours-uvicorn', 'get'), cu)} "
        f"({per_cpu('ours-uvicorn', 'get'):,.0f} req per CPU-s) | "
        f"{pct(per_cpu('ours-uvicorn', 'read'), cu)} "
        f"({per_cpu('ours-uvicorn', 'read'):,.0f}) | {cu:,.0f} req per CPU-s | |",
        f"| daphne, mixed workload | {pct(rps('ours-daphne', 'mixed-modern'), td)} of daphne's ceiling "
        f"({rps('ours-daphne', 'mixed-modern'):,.0f} req/s, all methods) | | {td:,.0f} req/s | |",
        "",
        f"Conditions: {conditions.machine()}; load average (1 / 5 / 15 min) {before['load']} before, "
        f"{after['load']} after; running beside it: {before['busy']} (before), {after['busy']} (after); "
        f"{conditions.today()}; {conditions.versions()}. \"server CPU\" is the share of a core the server "
        "process used: under 100% it waited, for its core (other work on CPU 0) or for the load generator (other "
        "work on CPU 1), and req/s then says as much about the machine as about the server; requests per second "
        "of server CPU (req/s divided by that share) move less with the load.",
    ]
    return "\n".join(lines)


def pct(value: float, ceiling: float) -> str:
    return f"{100 * value / ceiling:.0f}%" if ceiling and value else "-"


def snapshot() -> dict[str, str]:
    busy = conditions.busy_processes(exclude=set())
    return {"load": conditions.load_average(), "busy": ", ".join(busy) or "nothing over 5% of a core"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--duration", type=float, default=10.0)
    ap.add_argument("--warmup", type=float, default=2.0)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--prompts", type=int, default=1000)
    ap.add_argument("--resources", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2, help="measure every target this many times (median)")
    ap.add_argument("--only", default="", help="comma-separated target names to run")
    args = ap.parse_args()
    if not (SHARED / "mcp_load.py").exists():
        sys.exit(f"bench: {SHARED} not found (set MCP_SHARED_BENCH)")

    tmp = Path(tempfile.mkdtemp(prefix="mcp-bench-"))
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp}/bench.sqlite3", MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0",
               ALLOWED_HOSTS="127.0.0.1,localhost", DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789")
    env.pop("REDIS_URL", None)
    env.update(MCP_SHARED_BENCH=str(SHARED), FLOOR_PROMPTS=str(args.prompts), FLOOR_RESOURCES=str(args.resources))
    subprocess.run([PY, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    t0 = time.time()
    subprocess.run([PY, "manage.py", "bench_load", "--prompts", str(args.prompts), "--resources", str(args.resources)],
                   cwd=ROOT, env=env, check=True, stdout=sys.stderr)  # stdout is the Markdown alone
    print(f"bench_load: {time.time() - t0:.1f}s", file=sys.stderr)

    outdir = ROOT / "bench" / "results"
    outdir.mkdir(parents=True, exist_ok=True)
    raw_path = outdir / f"throughput-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"
    before = snapshot()
    results = measure(args, env, tmp, raw_path)
    after = snapshot()
    print("\n" + report(results, before, after, args))
    print(f"\nraw results: {raw_path.relative_to(ROOT)}")
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
