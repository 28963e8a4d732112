#!/usr/bin/env python3
"""First byte of the admin's entry change lists with the demo data, then with a large registry,
measured in one run so the ratio compares like with like (issue 23: the lists were N+1).

On a fresh SQLite file (removed first): migrate, import the demo registry, time each change list
(median of --repeat in-process requests through Django's test client, logged in as a superuser,
after one warm-up); then `bench_load --prompts N --resources N` for each N of --sizes and time
them again, with their full page (100 rows) and with the page cut to the demo's number of rows
(the same page on a larger registry: what the registry's size alone costs). Prints a
Markdown table (time, queries, rows on the page, ratio to the demo) and writes the figures to
bench/results/admin-lists-<time>.json. Run from a checkout, with the project's interpreter:

  .venv/bin/python bench/admin_lists.py [--sizes 2000,10000] [--repeat 7] [--db /tmp/x.sqlite3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LISTS = {"prompt": "/admin/registry/prompt/", "resource": "/admin/registry/resource/",
         "template": "/admin/registry/resourcetemplate/", "review queue": "/admin/registry/reviewrequest/"}
MODELS = {"prompt": "Prompt", "resource": "Resource", "template": "ResourceTemplate", "review queue": "ReviewRequest"}


def measure_short_pages(client, repeat: int, demo: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Each list with its page cut to the demo's number of rows: the same page on a larger registry."""
    from django.apps import apps
    from django.contrib import admin

    found = {}
    for name, path in LISTS.items():
        model_admin = admin.site._registry[apps.get_model("registry", MODELS[name])]
        kept = model_admin.list_per_page
        model_admin.list_per_page = max(1, int(demo[name]["rows"]))
        try:
            found[name] = measure(client, path, repeat)
        finally:
            model_admin.list_per_page = kept
    return found


def measure(client, path: str, repeat: int) -> dict[str, float]:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    client.get(path)  # warm-up: templates, catalog caches
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        response = client.get(path)
        times.append(time.perf_counter() - start)
        assert response.status_code == 200, (path, response.status_code)
    with CaptureQueriesContext(connection) as queries:
        response = client.get(path)
    rows = response.content.count(b'name="_selected_action"')
    return {"seconds": statistics.median(times), "best": min(times), "queries": len(queries), "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="2000",
                        help="comma-separated N: measure with N prompts + N resources (each tops up the last)")
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--db", default="/tmp/admin-lists.sqlite3")
    args = parser.parse_args()
    for suffix in ("", "-wal", "-shm"):
        Path(args.db + suffix).unlink(missing_ok=True)
    os.environ.update(DJANGO_DEBUG="1", DATABASE_URL=f"sqlite:///{args.db}",
                      DJANGO_SETTINGS_MODULE=os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings"))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.test import Client

    settings.DEBUG = False  # DEBUG's query log grows with the run; the env var is only for the dev secret key
    call_command("migrate", verbosity=0)
    call_command("registry_import", str(ROOT / "demo" / "registry.yaml"), publish=True, note="Demo data", verbosity=0)
    admin = get_user_model().objects.create_superuser("bench-admin", "bench@example.com", "bench-pw-123456")
    client = Client(HTTP_HOST="localhost")
    client.force_login(admin)
    sizes = [int(n) for n in args.sizes.split(",")]
    results: dict[str, dict[str, dict[str, float]]] = {"demo": {}}
    for name, path in LISTS.items():
        results["demo"][name] = measure(client, path, args.repeat)
    for size in sizes:
        call_command("bench_load", prompts=size, resources=size, verbosity=0)
        results[f"+{size}+{size}"] = {name: measure(client, path, args.repeat) for name, path in LISTS.items()}
        results[f"+{size}+{size}, demo's page length"] = measure_short_pages(client, args.repeat, results["demo"])
    commit = subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True,
                            text=True).stdout.strip()
    print(f"commit {commit}; +N+N = demo + N prompts + N resources; median of {args.repeat}; "
          "median and best time (queries, rows on the page, median's ratio to the demo's)\n")
    print("| list | " + " | ".join(results) + " |")
    print("|---" * (len(results) + 1) + "|")
    for name in LISTS:
        demo = results["demo"][name]
        cells = [f"{r[name]['seconds'] * 1000:.0f} ms, best {r[name]['best'] * 1000:.0f} ms ({r[name]['queries']} q, "
                 f"{r[name]['rows']} rows, {r[name]['seconds'] / demo['seconds']:.2f}x)" for r in results.values()]
        print(f"| {name} | " + " | ".join(cells) + " |")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"admin-lists-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(
        json.dumps({"commit": commit, "args": vars(args), "results": results}, indent=2))


if __name__ == "__main__":
    main()
