#!/usr/bin/env python3
"""Write-path benchmark: publish latency through each path, and bulk export / import wall time.

1. Publish p50/p99 of one resource (docs://doc-00001) through
     admin   POST /admin/registry/resource/<id>/publish/   (draft changed through the API first, untimed)
     api     POST /api/v1/resources/<id>/publish/           (draft changed through the API first, untimed)
     import  POST /api/v1/import/?publish=true              (draft change + publish in one request)
   on one daphne worker (SQLite, 1,000 prompts + 1,000 resources), first with no listeners, then
   with K open `subscriptions/listen` streams on the same worker (held by bench/listeners.py in
   another process, which also reports commit -> last listener). Server on CPU 0, clients on CPU 1.
2. Bulk (SQLite, N prompts + N resources): `registry_export` wall time, then `registry_import` of
   a file where N entries changed (N/2 prompt descriptions, N/2 resource texts), drafts only and
   with --publish, and the re-import of the same file (must write nothing). Child CPU time is
   reported beside wall time, since a shared machine stretches wall time, and so is the load
   average when each step started. The import writes through the bulk writer
   (registry/portable/bulk.py); --reference also times the same --publish import through the
   services one entry at a time (import_documents(bulk=False)), for the ratio. The bulk file of
   10k+10k is ~40 MB, so REGISTRY_MAX_IMPORT_BYTES is raised for it.

Writes JSON lines and a Markdown summary to bench/results/writes-<time>.{jsonl,md}.
Usage: .venv/bin/python bench/writes.py [-n 40] [-k 1000] [--gap 0] [--bulk 10000] [--reference] (--bulk 0 skips part 2)
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
from http.cookies import SimpleCookie
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run import free_port, pinned, wait_port

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable
URI = "docs://doc-00001"


def manage(env: dict[str, str], *args: str, timeout: float = 1800) -> str:
    done = subprocess.run([PY, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        sys.exit(f"manage.py {' '.join(args)} failed:\n{done.stderr[-2000:]}")
    return done.stdout


PASSWORD = "bench-password-not-secret"  # the bench superuser's, in a throwaway database


def prepare(env: dict[str, str]) -> str:
    """Migrate, load 1k+1k, create the bench superuser; returns its API token."""
    manage(env, "migrate", "--noinput")
    manage(env, "bench_load", "--prompts", "1000", "--resources", "1000")
    return manage(env, "shell", "-v", "0", "-c",
                  "from django.contrib.auth.models import User; from rest_framework.authtoken.models import Token; "
                  "u, _ = User.objects.get_or_create(username='bench', "
                  "defaults={'is_superuser': True, 'is_staff': True}); "
                  f"u.set_password('{PASSWORD}'); u.save(); "
                  "print(Token.objects.get_or_create(user=u)[0].key)").strip()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


class Client:
    """One keep-alive HTTP connection with a cookie jar (admin session + CSRF)."""

    def __init__(self, port: int, token: str) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        self.token = token
        self.cookies: dict[str, str] = {}

    def request(self, method: str, path: str, body: bytes | str | None = None, *, content_type: str = "",
                api: bool = True, referer: bool = False) -> tuple[int, bytes, float]:
        headers = {"Host": "127.0.0.1"}
        if api:
            headers["Authorization"] = f"Token {self.token}"
        if content_type:
            headers["Content-Type"] = content_type
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        if referer:
            headers["Referer"] = "http://127.0.0.1/admin/"
        started = time.perf_counter()
        self.conn.request(method, path, body=body, headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        for header in response.headers.get_all("Set-Cookie") or []:
            for key, morsel in SimpleCookie(header).items():
                self.cookies[key] = morsel.value
        return response.status, data, elapsed

    def json(self, method: str, path: str, payload: dict) -> tuple[int, dict, float]:
        status, data, ms = self.request(method, path, json.dumps(payload), content_type="application/json")
        return status, (json.loads(data) if data else {}), ms


def admin_login(client: Client, password: str) -> None:
    status, page, _ = client.request("GET", "/admin/login/", api=False)
    token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1).decode()
    form = urllib.parse.urlencode({"csrfmiddlewaretoken": token, "username": "bench", "password": password,
                                   "next": "/admin/"})
    status, _, _ = client.request("POST", "/admin/login/", form, content_type="application/x-www-form-urlencoded",
                                  api=False, referer=True)
    if status != 302:
        sys.exit(f"admin login failed: HTTP {status}")


class Publisher:
    def __init__(self, port: int, token: str, password: str) -> None:
        self.client = Client(port, token)
        status, found, _ = self.client.json("GET", f"/api/v1/resources/lookup/?uri={urllib.parse.quote(URI)}", {})
        if status != 200:
            sys.exit(f"lookup of {URI} failed: HTTP {status} {found}")
        self.pk = found["id"]
        admin_login(self.client, password)
        status, page, _ = self.client.request("GET", f"/admin/registry/resource/{self.pk}/publish/", api=False)
        found_token = re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', page)
        if status != 200 or found_token is None:
            sys.exit(f"admin publish page: HTTP {status}")
        self.csrf = found_token.group(1).decode()  # login rotates the token; this one is the session's
        self.n = 1

    def _edit(self) -> str:
        self.n += 1
        text = f"# doc-00001 v{self.n}\nedited by bench/writes.py\n"
        status, body, _ = self.client.json("PATCH", f"/api/v1/resources/{self.pk}/", {"text": text})
        if status != 200:
            sys.exit(f"draft edit failed: HTTP {status} {body}")
        return text

    def publish(self, path: str, uri: str = URI) -> float:
        """One publish through `path`; the import path may publish another docs://doc-XXXXX (`uri`)."""
        if path == "import":
            self.n += 1
            name = uri.removeprefix("docs://")
            doc = (f"resources:\n  - uri: {uri}\n    name: {name}\n    mime_type: text/markdown\n"
                   f"    text: \"# {name} v{self.n}\\n\"\n    labels: [production]\n")
            status, body, ms = self.client.request(
                "POST", "/api/v1/import/?publish=true&note=bench&override_reason=bench", doc,
                content_type="application/yaml")
            ok = status == 200 and json.loads(body)["outcomes"][0]["published"] is not None
        elif path == "api":
            self._edit()
            status, body, ms = self.client.request(
                "POST", f"/api/v1/resources/{self.pk}/publish/",
                json.dumps({"note": "bench", "labels": ["production"], "override_reason": "bench"}),
                content_type="application/json")
            ok = status == 201
        else:
            self._edit()
            form = urllib.parse.urlencode([("csrfmiddlewaretoken", self.csrf), ("note", "bench"),
                                           ("labels", "production"), ("override", "on"),
                                           ("override_reason", "bench")])
            status, body, ms = self.client.request(
                "POST", f"/admin/registry/resource/{self.pk}/publish/", form,
                content_type="application/x-www-form-urlencoded", api=False, referer=True)
            ok = status == 302
        if not ok:
            sys.exit(f"{path} publish failed: HTTP {status} {body[:500]!r}")
        return ms


class Listeners:
    """bench/listeners.py in its own process on CPU 1 (`sources` local addresses: see there)."""

    def __init__(self, port: int, k: int, sources: int = 1) -> None:
        self.proc = subprocess.Popen(pinned(1, [PY, str(ROOT / "bench" / "listeners.py"), "--port", str(port),
                                                "-k", str(k), "--uri", URI, "--sources", str(sources)]),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line:
            sys.exit("listeners did not start")
        self.ready = json.loads(line)["ready"]

    def finish(self) -> list[dict]:
        time.sleep(1.0)  # let the last notifications arrive
        self.proc.terminate()
        out, _ = self.proc.communicate(timeout=120)
        lines = out.strip().splitlines()
        return json.loads(lines[-1])["frames"] if lines else []


def commit_times(env: dict[str, str], after: int, last: bool = False) -> list[tuple[int, float]]:
    """(id, created_at epoch) of change-log rows after `after`: when each publish wrote its change
    (inside its transaction, so a hair before its commit)."""
    code = ("import json; from registry.models import ChangeLogEntry as C; "
            f"rows = C.objects.filter(id__gt={after}).order_by('{'-id' if last else 'id'}'); "
            f"rows = rows[:1] if {last} else rows; "
            "print(json.dumps([[r.id, r.created_at.timestamp()] for r in rows]))")
    found = json.loads(manage(env, "shell", "-v", "0", "-c", code).strip() or "[]")
    return [tuple(r) for r in found] or [(0, 0.0)]


def fan_out(frames: list[dict], commits: list[tuple[int, float]], k: int) -> dict:
    """Change-log write -> first and LAST of k listeners, per publish (one notification each)."""
    row: dict = {"bench": "fan-out", "listeners": k, "publishes": len(commits), "notifications": len(frames)}
    if len(frames) != len(commits) or any(f["count"] != k for f in frames):
        row["mismatch"] = [f["count"] for f in frames][:20]
        return row
    last = [(f["last"] - c[1]) * 1000 for f, c in zip(frames, commits, strict=True)]
    first = [(f["first"] - c[1]) * 1000 for f, c in zip(frames, commits, strict=True)]
    row.update(first_p50_ms=round(statistics.median(first), 1), last_p50_ms=round(statistics.median(last), 1),
               last_p99_ms=round(percentile(last, 0.99), 1))
    return row


def publish_latency(args: argparse.Namespace, tmp: Path, env: dict[str, str]) -> list[dict]:
    token = prepare(env)
    port = free_port()
    log = (tmp / "daphne.log").open("w")
    server = subprocess.Popen(pinned(0, [PY, "-m", "daphne", "-v", "0", "-e",
                                         f"tcp:port={port}:interface=127.0.0.1:backlog=4096",
                                         "config.asgi:application"]),
                              env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    rows = []
    try:
        wait_port(port)
        publisher = Publisher(port, token, PASSWORD)
        for path in ("admin", "api", "import"):  # warm-up: first requests pay for imports and caches
            for _ in range(3):
                publisher.publish(path)
        for k in (0, args.listeners):
            marker = commit_times(env, 0, last=True)[-1][0]
            listeners = Listeners(port, k) if k else None
            time.sleep(1.0)
            for path in ("admin", "api", "import"):
                times = []
                for _ in range(args.publishes):
                    times.append(publisher.publish(path))
                    time.sleep(args.gap)
                rows.append({"bench": "publish", "path": path, "listeners": listeners.ready if listeners else 0,
                             "n": len(times), "p50_ms": round(statistics.median(times), 1),
                             "p99_ms": round(percentile(times, 0.99), 1), "max_ms": round(max(times), 1)})
                print(json.dumps(rows[-1]), flush=True)
                time.sleep(0.3)
            if listeners is not None:
                frames = listeners.finish()
                commits = commit_times(env, marker)
                rows.append(fan_out(frames, commits, listeners.ready))
                print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(10)
    return rows


def timed(env: dict[str, str], *args: str) -> tuple[float, float, str]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = manage(env, *args)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return round(wall, 1), round(cpu, 1), out.strip().splitlines()[-1] if out.strip() else ""


def edit(exported: str, n: int) -> str:
    """n/2 prompt descriptions and n/2 resource texts changed."""
    half = n // 2
    text = re.sub(r"'Synthetic prompt (\d+):",
                  lambda m: (m.group(0).replace("Synthetic", "Edited synthetic") if int(m.group(1)) < half
                             else m.group(0)),
                  exported)
    return re.sub(r"# doc-(\d+) v1\n", lambda m: f"# doc-{m.group(1)} v2\n" if int(m.group(1)) < half else m.group(0),
                  text)


def load() -> float:
    return round(os.getloadavg()[0], 2)


REFERENCE = ("from registry.portable.importer import import_documents; "
             "print(import_documents({path!r}, publish=True, note='bench edit', bulk=False).summary())")


def bulk(args: argparse.Namespace, tmp: Path, base_env: dict[str, str]) -> list[dict]:
    n = args.bulk
    db = tmp / "bulk.sqlite3"
    env = dict(base_env, DATABASE_URL=f"sqlite:///{db}", MEDIA_ROOT=str(tmp / "media"),
               REGISTRY_MAX_IMPORT_BYTES=str(512 * 1024 * 1024))
    manage(env, "migrate", "--noinput")
    manage(env, "bench_load", "--prompts", str(n), "--resources", str(n))
    pristine = tmp / "bulk-pristine.sqlite3"
    shutil.copy(db, pristine)
    rows = []
    exported = tmp / "export.yaml"
    started_load = load()
    wall, cpu, _ = timed(env, "registry_export", str(exported))
    rows.append({"bench": "export", "entries": f"{n}+{n}", "wall_s": wall, "cpu_s": cpu,
                 "bytes": exported.stat().st_size, "load": started_load})
    print(json.dumps(rows[-1]), flush=True)
    edited = tmp / "edited.yaml"
    edited.write_text(edit(exported.read_text(encoding="utf-8"), n), encoding="utf-8")
    for mode, extra in (("drafts", ()), ("publish", ("--publish", "--note", "bench edit"))):
        shutil.copy(pristine, db)
        started_load = load()
        wall, cpu, summary = timed(env, "registry_import", str(edited), *extra)
        rows.append({"bench": f"import {mode}", "changed": n, "wall_s": wall, "cpu_s": cpu, "summary": summary,
                     "load": started_load})
        print(json.dumps(rows[-1]), flush=True)
        started_load = load()
        wall, cpu, summary = timed(env, "registry_import", str(edited), *extra)
        rows.append({"bench": f"re-import {mode} (unchanged)", "changed": 0, "wall_s": wall, "cpu_s": cpu,
                     "summary": summary, "load": started_load})
        print(json.dumps(rows[-1]), flush=True)
    if args.reference:
        shutil.copy(pristine, db)
        started_load = load()
        wall, cpu, summary = timed(env, "shell", "-v", "0", "-c", REFERENCE.format(path=str(edited)))
        rows.append({"bench": "import publish, one by one (reference)", "changed": n, "wall_s": wall, "cpu_s": cpu,
                     "summary": summary, "load": started_load})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def markdown(rows: list[dict], args: argparse.Namespace) -> str:
    out = [f"# Write-path benchmark, {time.strftime('%Y-%m-%d %H:%M')}"]
    if not args.skip_publish:
        out += ["", f"Publish of one resource, {args.publishes} per path, {args.gap} s apart, one daphne worker "
                f"(SQLite, 1k+1k); load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}.", "",
                "| path | listeners | p50 ms | p99 ms | max ms |", "|---|---|---|---|---|"]
    out += [f"| {r['path']} | {r['listeners']} | {r['p50_ms']} | {r['p99_ms']} | {r['max_ms']} |"
            for r in rows if r["bench"] == "publish"]
    for r in rows:
        if r["bench"] == "fan-out":
            out += ["", f"Change written -> listeners ({r['listeners']} on the publishing worker, "
                    f"{r['publishes']} publishes): first p50 {r.get('first_p50_ms')} ms, LAST p50 "
                    f"{r.get('last_p50_ms')} ms, LAST p99 {r.get('last_p99_ms')} ms"
                    + (f" (frames per publish: {r['mismatch']})" if "mismatch" in r else "")]
    bulk_rows = [r for r in rows if r["bench"] not in ("publish", "fan-out")]
    if bulk_rows:
        out += ["", "| bulk | wall s | child CPU s | load avg | result |", "|---|---|---|---|---|"]
        out += [f"| {r['bench']} ({r.get('entries') or r.get('changed')}) | {r['wall_s']} | {r['cpu_s']} | "
                f"{r.get('load', '')} | {r.get('summary') or str(r.get('bytes', '')) + ' bytes'} |" for r in bulk_rows]
        bulk_publish = next((r for r in bulk_rows if r["bench"] == "import publish"), None)
        reference = next((r for r in bulk_rows if "reference" in r["bench"]), None)
        if bulk_publish and reference and bulk_publish["cpu_s"]:
            out += ["", "Bulk writer vs one entry at a time (--publish): "
                    f"{reference['cpu_s'] / bulk_publish['cpu_s']:.1f}x less CPU, "
                    f"{reference['wall_s'] / max(bulk_publish['wall_s'], 0.1):.1f}x less wall time."]
    return "\n".join(out) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", "--publishes", type=int, default=40, help="publishes per path and listener count")
    ap.add_argument("-k", "--listeners", type=int, default=1000)
    ap.add_argument("--gap", type=float, default=0.0,
                    help="seconds between publishes "
                         "(0: back to back, so a publish may meet the previous one's fan-out)")
    ap.add_argument("--bulk", type=int, default=10000, help="N prompts + N resources for export/import (0: skip)")
    ap.add_argument("--skip-publish", action="store_true")
    ap.add_argument("--reference", action="store_true",
                    help="also time the --publish import through the services one entry at a time (slow)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-writes-"))
    base_env = dict(os.environ, MCP_ALLOW_ANONYMOUS="1", DJANGO_DEBUG="0", ALLOWED_HOSTS="127.0.0.1,localhost",
                    DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789")
    base_env.pop("REDIS_URL", None)
    rows: list[dict] = []
    try:
        if not args.skip_publish:
            rows += publish_latency(args, tmp, dict(base_env, DATABASE_URL=f"sqlite:///{tmp}/publish.sqlite3"))
        if args.bulk:
            rows += bulk(args, tmp, base_env)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    (out / f"writes-{stamp}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    summary = markdown(rows, args)
    (out / f"writes-{stamp}.md").write_text(summary)
    print("\n" + summary)


if __name__ == "__main__":
    main()
