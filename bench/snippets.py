#!/usr/bin/env python3
"""Snippets: what composing costs a `prompts/get`, and how fast a snippet release reaches listeners.

(a) `prompts/get` of a prompt whose text includes 5 snippets (`{{> part-1 }}` .. `{{> part-5 }}`)
against a prompt with the same text inlined, in the same run and the same server, requests
alternating (so both see the same machine): p50 and mean per request over HTTP (one keep-alive
connection, the 2026-07-28 wire), and in this process the catalog's own `get_prompt` (the
rendering alone, where the difference is not diluted by HTTP and JSON-RPC). Target: <= 1.2x.

(b) A snippet release with D dependent prompts (default 1,000, all following 'bench-style' on
production) while K listen streams (bench/listeners.py, CPU 1) are open on one daphne worker
(CPU 0): `services.move_label` of the snippet's production label in a `manage.py shell` process,
as the command line would (the REST and admin paths call the same service: the protected-label
and dependents' review checks, the argument guard over every dependent, the audit row). Reported:
move -> committed (the mover's own clock: the checks, the label, the snippet's change row and D
dependents' rows in one transaction), move -> first and LAST listener heard `prompts/list_changed`, and the worker's own
delivery time (its log line "changes [...]: N notifications queued ... in X ms"). The worker
learns of a commit made in another process from the change log (CHANGE_POLL_SECONDS, 0.5 s by
default): that wait is in the move -> heard figure. Target: <= 2 s.

  .venv/bin/python bench/snippets.py [-d 1000] [-k 100] [-n 1000]

Writes bench/results/snippets-<time>.{json,md}. A run takes about a minute (most of it creating
the dependents).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, pinned, wait_port
from writes import Listeners, manage

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
PARTS = {f"part-{i}": f"Part {i}: answer in the house style, cite the policy, keep it short. " * 3
         for i in range(1, 6)}
COMPOSED = "Question about {{ topic }}.\n" + "\n".join(f"{{{{> {name} }}}}" for name in PARTS)
INLINED = "Question about {{ topic }}.\n" + "\n".join(PARTS.values())

SETUP = """
import time
from django.db import transaction
from registry.models import Snippet
from tests.factories import make_prompt, make_snippet, release
parts = {parts!r}
for name, text in parts.items():
    release(make_snippet(name, text=text))
style = make_snippet('bench-style', text='Be brief.')
release(style)
Snippet.objects.filter(pk=style.pk).update(text='Be warm.')
release(Snippet.objects.get(pk=style.pk), labels=())
def text(t): return [{{'role': 'user', 'kind': 'text', 'text': t}}]
release(make_prompt('composed-5', messages=text({composed!r})))
release(make_prompt('inlined-5', messages=text({inlined!r})))
started = time.monotonic()
for i in range({dependents}):
    release(make_prompt(f'dependent-{{i:04d}}',
                        messages=text('{{{{> bench-style }}}} Reply ' + str(i) + ' about {{{{ topic }}}}.')))
print('dependents created in', round(time.monotonic() - started, 1), 's')
"""

MOVE = """
import json, time
from registry.models import Snippet
from registry.release import services
style = Snippet.objects.get(name='bench-style')
started = time.time()
services.move_label(style, label='production', version_number={number}, acting_user=None, actor='bench',
                    note='bench release')
print(json.dumps({{"started": started, "committed": time.time()}}))
"""

IN_PROCESS = """
import json, time
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
viewer, catalog = Viewer(), catalog_for('production')
for name in ('composed-5', 'inlined-5'):
    catalog.get_prompt(viewer, name, {{'topic': 'owls'}})
times = {{'composed-5': [], 'inlined-5': []}}
for _ in range({n}):
    for name in times:
        t = time.perf_counter()
        catalog.get_prompt(viewer, name, {{'topic': 'owls'}})
        times[name].append((time.perf_counter() - t) * 1e6)
print(json.dumps(times))
"""


def prompts_get(conn: http.client.HTTPConnection, name: str) -> float:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {
        "name": name, "arguments": {"topic": "owls"},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}})
    started = time.perf_counter()
    conn.request("POST", "/mcp", body, {"Content-Type": "application/json",
                                        "Accept": "application/json, text/event-stream",
                                        "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "prompts/get",
                                        "Mcp-Name": name})
    answer = conn.getresponse().read()
    elapsed = (time.perf_counter() - started) * 1000
    if b'"result"' not in answer:
        sys.exit(f"prompts/get {name} failed: {answer[:300]!r}")
    return elapsed


def ratio_row(label: str, times: dict[str, list[float]], unit: str) -> dict:
    composed, inlined = times["composed-5"], times["inlined-5"]
    row = {"bench": label, "n": len(composed), "unit": unit,
           "composed_p50": round(statistics.median(composed), 2), "inlined_p50": round(statistics.median(inlined), 2),
           "composed_mean": round(statistics.fmean(composed), 2), "inlined_mean": round(statistics.fmean(inlined), 2)}
    row["ratio_p50"] = round(row["composed_p50"] / row["inlined_p50"], 3)
    row["ratio_mean"] = round(row["composed_mean"] / row["inlined_mean"], 3)
    return row


def release_row(env: dict[str, str], port: int, log: Path, args: argparse.Namespace) -> dict:
    listeners = Listeners(port, args.listeners)
    time.sleep(1.0)
    moved = json.loads(manage(env, "shell", "-v", "0", "-c", MOVE.format(number=2)).strip().splitlines()[-1])
    time.sleep(2.0)  # then finish() waits another second: 3 s after the commit
    frames = listeners.finish()
    row: dict = {"bench": "snippet release", "dependents": args.dependents, "listeners": listeners.ready,
                 "move_to_commit_ms": round((moved["committed"] - moved["started"]) * 1000, 1)}
    if frames:
        row.update(move_to_first_ms=round((frames[0]["first"] - moved["started"]) * 1000, 1),
                   move_to_last_ms=round((frames[0]["last"] - moved["started"]) * 1000, 1),
                   commit_to_last_ms=round((frames[0]["last"] - moved["committed"]) * 1000, 1),
                   heard_by=frames[0]["count"], notifications=len(frames))
    delivered = re.findall(r"changes \[[^\]]*\]: (\d+) notifications queued for (\d+) listeners in ([0-9.]+) ms",
                           log.read_text(errors="replace"))
    if delivered:
        queued, _listening, ms = max(delivered, key=lambda d: int(d[0]))
        row.update(worker_delivery_ms=float(ms), worker_queued=int(queued))
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-d", "--dependents", type=int, default=1000)
    ap.add_argument("-k", "--listeners", type=int, default=100)
    ap.add_argument("-n", "--requests", type=int, default=1000, help="prompts/get of each prompt")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-snippets-"))
    env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
               DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789", LOG_LEVEL="INFO",
               DATABASE_URL=f"sqlite:///{tmp}/snippets.sqlite3", MEDIA_ROOT=str(tmp / "media"))
    env.pop("REDIS_URL", None)
    rows: list[dict] = []
    server = None
    try:
        manage(env, "migrate", "--noinput")
        print(manage(env, "shell", "-v", "0", "-c", SETUP.format(parts=PARTS, composed=COMPOSED, inlined=INLINED,
                                                                  dependents=args.dependents)).strip())
        in_process = json.loads(manage(env, "shell", "-v", "0", "-c", IN_PROCESS.format(n=args.requests * 5))
                                .strip().splitlines()[-1])
        rows.append(ratio_row("get_prompt in process", in_process, "us"))
        print(json.dumps(rows[-1]), flush=True)
        port = free_port()
        log = tmp / "daphne.log"
        with log.open("w") as out:
            server = subprocess.Popen(pinned(0, [PY, "-m", "daphne", "-v", "0", "-e",
                                                 f"tcp:port={port}:interface=127.0.0.1:backlog=4096",
                                                 "config.asgi:application"]),
                                      env=env, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT)
            wait_port(port)
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            for _ in range(50):  # warm-up: the catalog, the content cache, the first imports
                prompts_get(conn, "composed-5")
                prompts_get(conn, "inlined-5")
            times: dict[str, list[float]] = {"composed-5": [], "inlined-5": []}
            for _ in range(args.requests):
                for name in times:
                    times[name].append(prompts_get(conn, name))
            conn.close()
            rows.append(ratio_row("prompts/get over HTTP", times, "ms"))
            print(json.dumps(rows[-1]), flush=True)
            rows.append(release_row(env, port, log, args))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        if server is not None:
            server.terminate()
            server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out_dir / f"snippets-{stamp}.json").write_text(json.dumps(rows, indent=1))
    lines = ["| bench | figures |", "|---|---|"] + [
        f"| {row['bench']} | {', '.join(f'{k}={v}' for k, v in row.items() if k != 'bench')} |" for row in rows]
    (out_dir / f"snippets-{stamp}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
