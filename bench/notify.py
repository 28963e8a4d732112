#!/usr/bin/env python3
"""Notification latency and idle-listener memory: this registry vs the official-SDK peer.

Runs `../shared/bench/notify_latency.py` (K listeners, T triggers, publish-to-receipt latency)
against:
  ours, one daphne process (SQLite, in-memory channel layer)     trigger: REST import+publish
  ours, two daphne workers (PostgreSQL + Redis), listeners on A, trigger through B
  peer (official SDK) under uvicorn                               trigger: its /admin/touch
and measures the server's resident memory per idle listen stream (RSS delta / K).

The trigger is a real publish: `curl` POSTs a YAML document with a new text for
docs://doc-00001 to `/api/v1/import/?publish=true` (draft update + publish + audit + commit),
so the latency includes the trigger's own time, reported separately as trigger_cmd_p50_ms.
Usage: .venv/bin/python bench/notify.py [-k 1000] [-t 20] [--postgres URL --redis URL]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import SHARED, free_port, pinned, wait_port  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
TRIGGER = r"""n=$(( $(cat {counter} 2>/dev/null || echo 0) + 1 )); echo $n > {counter}
printf 'resources:\n  - uri: docs://doc-00001\n    name: doc-00001\n    mime_type: text/markdown\n    text: "# doc-00001 v%s\\n"\n    labels: [production]\n' "$((n+1))" |
curl -fsS -o /dev/null -X POST -H "Authorization: Token {token}" -H "Content-Type: application/yaml" \
  --data-binary @- "{base}/api/v1/import/?publish=true&note=bench&override_reason=bench"
"""


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def idle_listeners(port: int, k: int) -> list[asyncio.StreamWriter]:
    """Open K modern listen streams and wait for each acknowledgement."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"promptsListChanged": True, "resourceSubscriptions": ["docs://doc-00001"]},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: subscriptions/listen\r\nContent-Length: {len(body)}\r\n\r\n").encode()

    async def one() -> asyncio.StreamWriter:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(head + body)
        data = b""
        while b"acknowledged" not in data:
            chunk = await reader.read(4096)
            if not chunk:
                raise RuntimeError("listen stream closed before its acknowledgement")
            data += chunk
        return writer

    writers = []
    for start in range(0, k, 100):
        writers += await asyncio.gather(*(one() for _ in range(start, min(k, start + 100))))
    return writers


def memory_per_listener(pid: int, port: int, k: int) -> float:
    async def measure() -> float:
        await asyncio.sleep(0.5)
        before = rss_kib(pid)
        writers = await idle_listeners(port, k)
        await asyncio.sleep(1.0)
        after = rss_kib(pid)
        for w in writers:
            w.close()
        return (after - before) / k

    return asyncio.run(measure())


def warm_up(trigger: list[str]) -> None:
    """One unmeasured trigger, so the first measured one does not pay for cold caches."""
    subprocess.run(trigger[1], shell=True, check=False, capture_output=True, timeout=60)


def latency(url: str, mode: str, k: int, t: int, trigger: list[str]) -> dict:
    cmd = pinned(1, [PY, str(SHARED / "notify_latency.py"), "--url", url, "--mode", mode, "-k", str(k),
                     "-t", str(t), "--uri", "docs://doc-00001", "--timeout", "5", *trigger])
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    lines = out.stdout.strip().splitlines()
    result = json.loads(lines[-1]) if lines else {"error": out.stderr[-800:]}
    return result


def start(cmd: list[str], env: dict[str, str], cwd: Path, log: Path, cpu: int = 0) -> subprocess.Popen:
    return subprocess.Popen(pinned(cpu, cmd), env=env, cwd=cwd, stdout=log.open("w"), stderr=subprocess.STDOUT)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def prepare(env: dict[str, str], tmp: Path, base: str) -> list[str]:
    manage(env, "migrate", "--noinput")
    manage(env, "bench_load", "--prompts", "1000", "--resources", "1000")
    token = manage(env, "shell", "-v", "0", "-c",
                   "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token; "
                   "u, _ = User.objects.get_or_create(username='bench', defaults={'is_superuser': True, 'is_staff': True}); "
                   "print(Token.objects.get_or_create(user=u)[0].key)").strip()
    script = tmp / f"trigger-{free_port()}.sh"
    script.write_text(TRIGGER.format(counter=tmp / "counter", token=token, base=base))
    return ["--trigger", f"sh {script}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-k", "--clients", type=int, default=1000)
    ap.add_argument("-t", "--triggers", type=int, default=20)
    ap.add_argument("--postgres", default=os.environ.get("TEST_POSTGRES_URL", ""))
    ap.add_argument("--redis", default=os.environ.get("TEST_REDIS_URL", ""))
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-notify-"))
    base_env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
                    DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789")
    base_env.pop("REDIS_URL", None)
    rows: list[tuple[str, str, dict]] = []

    # ours: one daphne process, embedded default
    env = dict(base_env, DATABASE_URL=f"sqlite:///{tmp}/notify.sqlite3")
    port = free_port()
    trigger = prepare(env, tmp, f"http://127.0.0.1:{port}")
    proc = start([PY, "-m", "daphne", "-v", "0", "-e", f"tcp:port={port}:interface=127.0.0.1:backlog=4096", "config.asgi:application"],
                 env, ROOT, tmp / "ours.log")
    try:
        wait_port(port)
        warm_up(trigger)
        mem = memory_per_listener(proc.pid, port, args.clients)
        for mode in ("modern", "legacy"):
            rows.append(("ours, 1 daphne (SQLite)", mode,
                         latency(f"http://127.0.0.1:{port}/mcp", mode, args.clients, args.triggers, trigger)))
        rows[-1][2]["idle_kib_per_listener"] = round(mem, 1)
        rows[-2][2]["idle_kib_per_listener"] = round(mem, 1)
    finally:
        stop(proc)

    # ours: two workers, PostgreSQL + Redis; listeners on A, publish through B
    if args.postgres and args.redis:
        import psycopg

        db = f"mcp_notify_{os.getpid()}"
        with psycopg.connect(args.postgres, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {db}")
        try:
            pg_url = args.postgres.rsplit("/", 1)[0] + f"/{db}"
            env = dict(base_env, DATABASE_URL=pg_url, REDIS_URL=args.redis)
            port_a, port_b = free_port(), free_port()
            trigger = prepare(env, tmp, f"http://127.0.0.1:{port_b}")
            # A (the listeners' worker) on CPU 0, B (the publishing worker) on CPU 1, like two hosts.
            workers = [start([PY, "-m", "daphne", "-v", "0", "-e", f"tcp:port={p}:interface=127.0.0.1:backlog=4096", "config.asgi:application"],
                             env, ROOT, tmp / f"worker-{p}.log", cpu) for cpu, p in enumerate((port_a, port_b))]
            try:
                wait_port(port_a)
                wait_port(port_b)
                warm_up(trigger)
                for mode in ("modern", "legacy"):
                    rows.append(("ours, 2 daphne workers (PostgreSQL+Redis), listeners on A, publish via B", mode,
                                 latency(f"http://127.0.0.1:{port_a}/mcp", mode, args.clients, args.triggers, trigger)))
            finally:
                for w in workers:
                    stop(w)
        finally:
            with psycopg.connect(args.postgres, autocommit=True) as conn:
                conn.execute(f"DROP DATABASE IF EXISTS {db} WITH (FORCE)")

    # peer: official SDK server
    port = free_port()
    proc = start([PY, "peer_server.py", "--prompts", "1000", "--resources", "1000", "--port", str(port),
                  "--json-response"], base_env, SHARED, tmp / "peer.log")
    try:
        wait_port(port)
        mem = memory_per_listener(proc.pid, port, args.clients)
        for mode in ("modern", "legacy"):
            result = latency(f"http://127.0.0.1:{port}/mcp", mode, args.clients, args.triggers,
                             ["--trigger", f'curl -fsS -o /dev/null -X POST "http://127.0.0.1:{port}/admin/touch?uri=docs://doc-00001"'])
            result["idle_kib_per_listener"] = round(mem, 1)
            rows.append(("peer (SDK, uvicorn)", mode, result))
    finally:
        stop(proc)

    print(f"\nK={args.clients} listeners, T={args.triggers} triggers\n")
    print("| server | generation | p50 ms | p99 ms | max ms | trigger p50 ms | missed | idle KiB/listener |")
    print("|---|---|---|---|---|---|---|---|")
    for name, mode, r in rows:
        print(f"| {name} | {mode} | {r.get('p50_ms')} | {r.get('p99_ms')} | {r.get('max_ms')} | "
              f"{r.get('trigger_cmd_p50_ms')} | {r.get('missed_notifications')} (clients {r.get('clients_missing_any')}) | "
              f"{r.get('idle_kib_per_listener', '')} |")
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"notify-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(rows, indent=1))
    shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
