#!/usr/bin/env python3
"""Unchanged re-import and one-file watch round: this checkout against a baseline checkout, same run.

1. With the BASELINE code (default: a detached `git worktree` of `main`, removed afterwards):
   `bench_load --prompts N --resources N` into SQLite, then `registry_export` of it. The database is
   copied, and the copy migrated by this checkout (its own migrations on top).
2. `registry_import EXPORT` (drafts only, the CI "import on every push" path) of that unchanged
   export: R times with the baseline code on its copy, R times with this code on its copy. This
   code's first run compares every entry and notes its digest (registry.portable.unchanged); the
   later runs are the steady state, the figure that counts. Wall time and child CPU time per run.
3. A watch round after one entry of a 40-file folder changed (the export split into 40 files):
   in one process per code, a settled watcher (first import and an unchanged round done), then one
   file edited and the round timed (the baseline imports the whole folder; this code parses the
   one file and compares digests).

Nothing else should run beside it; the load average at each step is reported with its figure.
Usage: .venv/bin/python bench/reimport.py [--n 5000] [--runs 3] [--baseline PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PY = sys.executable

ROUND = r"""
import json, sys, time
from pathlib import Path
from registry.portable import watching
folder = Path(sys.argv[-1])
incremental = "parsed" in watching.import_round.__code__.co_varnames
parsed = None
if incremental:
    from registry.portable.parsed import ParsedFiles
    parsed = ParsedFiles()
def one():
    kwargs = {"parsed": parsed, "changed": [folder / "part-07.yaml"]} if incremental else {}
    started, cpu = time.perf_counter(), time.process_time()
    outcome = watching.import_round(folder, publish=False, note="", **kwargs)
    assert outcome.ok, outcome.problems
    return time.perf_counter() - started, time.process_time() - cpu, outcome.line()
first = one()
settle = one()
part = folder / "part-07.yaml"
part.write_text(part.read_text().replace("Synthetic prompt", "Edited synthetic prompt", 1))
edited = one()
part.write_text(part.read_text().replace("Edited synthetic prompt", "Synthetic prompt", 1))
print(json.dumps({"first": first, "settle": settle, "edited": edited}))
"""

SPLIT = r"""
import sys
from pathlib import Path
import yaml
from registry.portable.dump import dump_document
from registry.portable.parse import load_file
data = load_file(sys.argv[-2]).data
out = Path(sys.argv[-1]); out.mkdir()
parts = 40
for i in range(parts):
    doc = {section: items[i::parts] for section, items in data.items() if items[i::parts]}
    (out / f"part-{i:02d}.yaml").write_text(dump_document(doc))
"""


def manage(code: Path, env: dict[str, str], *args: str) -> str:
    done = subprocess.run([PY, "manage.py", *args], cwd=code, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"manage.py {' '.join(args[:2])} ({code}) failed:\n{done.stderr[-3000:]}")
    return done.stdout


def script(code: Path, env: dict[str, str], text: str, *argv: str) -> str:
    done = subprocess.run([PY, "-c", "import django, os, sys; sys.path.insert(0, os.getcwd()); "
                           "os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings'); django.setup()\n"
                           + text, *argv], cwd=code, env=env, capture_output=True, text=True, timeout=3600)
    if done.returncode != 0:
        sys.exit(f"script ({code}) failed:\n{done.stderr[-3000:]}")
    return done.stdout


def timed(code: Path, env: dict[str, str], *args: str) -> dict[str, object]:
    load = round(os.getloadavg()[0], 2)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = manage(code, env, *args)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "load": load,
            "summary": out.strip().splitlines()[-1] if out.strip() else ""}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=5000, help="N prompts + N resources")
    ap.add_argument("--runs", type=int, default=3, help="re-imports per code")
    ap.add_argument("--baseline", type=Path, help="a checkout of the baseline code (default: a worktree of main)")
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="mcp-reimport-"))
    baseline = args.baseline
    made_worktree = baseline is None
    if made_worktree:
        baseline = tmp / "baseline"
        subprocess.run(["git", "worktree", "add", "--detach", str(baseline), "main"], cwd=ROOT, check=True,
                       capture_output=True)
    assert baseline is not None
    env = dict(os.environ, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="bench-only-not-a-secret-0123456789",
               MEDIA_ROOT=str(tmp / "media"), REGISTRY_MAX_IMPORT_BYTES=str(512 * 1024 * 1024))
    env.pop("REDIS_URL", None)
    old_db, new_db = tmp / "old.sqlite3", tmp / "new.sqlite3"
    old_env = dict(env, DATABASE_URL=f"sqlite:///{old_db}")
    new_env = dict(env, DATABASE_URL=f"sqlite:///{new_db}")
    rows: list[dict[str, object]] = []
    try:
        manage(baseline, old_env, "migrate", "--noinput")
        manage(baseline, old_env, "bench_load", "--prompts", str(args.n), "--resources", str(args.n))
        export = tmp / "export.yaml"
        manage(baseline, old_env, "registry_export", str(export))
        shutil.copy(old_db, new_db)
        manage(ROOT, new_env, "migrate", "--noinput")
        for code, name, code_env in ((baseline, "baseline", old_env), (ROOT, "this", new_env)):
            for run in range(1, args.runs + 1):
                row = {"step": "reimport", "code": name, "run": run, **timed(code, code_env, "registry_import",
                                                                           str(export))}
                rows.append(row)
                print(json.dumps(row), flush=True)
        for code, name, code_env in ((baseline, "baseline", old_env), (ROOT, "this", new_env)):
            folder = tmp / f"folder-{name}"
            script(code, code_env, SPLIT, str(export), str(folder))
            figures = json.loads(script(code, code_env, ROUND, str(folder)).strip().splitlines()[-1])
            for step, (wall, cpu, line) in figures.items():
                row = {"step": f"watch round ({step})", "code": name, "wall_s": round(wall, 2),
                       "cpu_s": round(cpu, 2), "load": round(os.getloadavg()[0], 2), "summary": line}
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        if made_worktree:
            subprocess.run(["git", "worktree", "remove", "--force", str(baseline)], cwd=ROOT, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
    steady = {name: min(float(r["cpu_s"]) for r in rows  # type: ignore[arg-type]
                        if r["step"] == "reimport" and r["code"] == name and (name == "baseline" or r["run"] != 1))
              for name in ("baseline", "this")}
    print(f"\n## Unchanged re-import of {args.n} prompts + {args.n} resources ({os.cpu_count()} cores)\n")
    print("| step | code | run | wall s | CPU s | load | summary |\n|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['step']} | {r['code']} | {r.get('run', '')} | {r['wall_s']} | {r['cpu_s']} | {r['load']} | "
              f"{r['summary']} |")
    print(f"\nsteady-state re-import CPU: baseline {steady['baseline']} s, this {steady['this']} s, "
          f"{steady['baseline'] / max(steady['this'], 1e-9):.2f}x")


if __name__ == "__main__":
    main()
