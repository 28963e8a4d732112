"""A serving process freezes its start-up objects and runs older-generation passes rarely."""

from __future__ import annotations

import gc

from config.gc_tuning import OLDER_THRESHOLDS, YOUNG_THRESHOLD, tune_for_serving


def test_tuning_for_serving_freezes_start_up_objects_and_makes_older_passes_rare():
    threshold = gc.get_threshold()
    try:
        tune_for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *OLDER_THRESHOLDS)
        assert OLDER_THRESHOLDS[0] > 10 and OLDER_THRESHOLDS[1] > 10
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)


START_UP = """
import asyncio, gc, json, os
os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
before = gc.get_threshold()
import config.asgi
imported = [gc.get_threshold(), gc.get_freeze_count()]
messages = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
sent = []

async def receive():
    return messages.pop(0)

async def send(message):
    sent.append(message["type"])

asyncio.run(config.asgi.application({"type": "lifespan", "asgi": {"version": "3.0"}}, receive, send))
print(json.dumps({"before": before, "imported": imported, "started": [gc.get_threshold(), gc.get_freeze_count()],
                  "sent": sent}))
"""


def test_importing_the_asgi_entry_point_leaves_the_collector_alone_and_serving_start_tunes_it():
    """A test, a script or a command that imports config.asgi keeps Python's collector; the
    server's first call (the lifespan start-up under uvicorn) tunes it."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run([sys.executable, "-c", START_UP], cwd=Path(__file__).resolve().parents[2],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert figures["imported"] == [figures["before"], 0]
    assert figures["started"][0] == [YOUNG_THRESHOLD, *OLDER_THRESHOLDS] and figures["started"][1] > 0
    assert figures["sent"] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]


async def test_the_first_request_of_a_server_without_lifespan_events_runs_the_start_up_hooks_once():
    """daphne sends no lifespan events: its first connection starts serving."""
    from channels.testing import HttpCommunicator

    from mcp_endpoint.routing import build_application

    ran = []

    async def django_app(scope, receive, send):
        await receive()
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    application = build_application(django_app, on_start=[lambda: ran.append("tuned")])
    for _ in range(2):
        response = await HttpCommunicator(application, "GET", "/").get_response()
        assert response["status"] == 204
    assert ran == ["tuned"]


def test_young_garbage_is_collected_as_often_as_by_default():
    """Short-lived cycles in the response path hold a response's bytes until a young pass: with a
    young threshold of 10,000 a worker that served 50 blobs of 4 MiB held twice the memory
    (bench/scale.py --blobs 50)."""
    assert YOUNG_THRESHOLD <= 700
