"""Redis killed under two daphne workers (private PostgreSQL cluster, private redis-server).

A ``resources/subscribe`` served by worker B, for a session whose GET stream is on worker A,
normally reaches A over the channel layer. With Redis down it must still take effect: A
re-reads the session's subscriptions before it delivers a change from the change log. Each
worker logs the outage once (plus a periodic summary), not a traceback every second, and
says when the layer is back."""

from __future__ import annotations

import asyncio
import time

import pytest

from .servers import (
    WATCHED,
    Server,
    amanage,
    base_env,
    changed_fixture,
    legacy_call,
    legacy_initialize,
    logs_on_failure,
    open_get_stream,
    prepare_database,
    wait_updated,
)

pytestmark = pytest.mark.e2e

OUTAGE = 8.0  # seconds with Redis down before the publish: channels_redis would log 8 tracebacks


async def test_a_cross_worker_subscribe_while_redis_is_down_still_takes_effect(private_postgres, private_redis,
                                                                               tmp_path):
    env = base_env(private_postgres.create_database("redis_outage"), private_redis.url())
    prepare_database(env)
    with Server("a", env, tmp_path) as a, Server("b", env, tmp_path) as b, logs_on_failure(a, b):
        sid = await legacy_initialize(a.port)
        stream = await open_get_stream(a.port, sid)  # opened with no subscriptions at all
        try:
            await stream.expect_silence(0.5)
            private_redis.kill()
            killed_at = time.monotonic()
            assert await legacy_call(b.port, sid, "resources/subscribe", {"uri": WATCHED}) == {}
            await asyncio.sleep(OUTAGE)
            receiving = asyncio.ensure_future(wait_updated(stream, WATCHED, 30))
            await amanage(env, "registry_import", str(changed_fixture(tmp_path, "While Redis was down")),
                          "--publish", "--note", "redis down")
            await receiving
            print(f"subscribe through B reached A's stream; notified {time.monotonic() - killed_at:.1f} s "
                  "after Redis was killed")

            log_a = a.log_path.read_text(errors="replace")
            tracebacks = log_a.count("Traceback (most recent call last)")
            assert "change-log catch-up active" in log_a, a.log()
            assert tracebacks <= 2, f"{tracebacks} tracebacks in {OUTAGE} s of outage\n{a.log()}"

            private_redis.start()  # same port
            deadline = time.monotonic() + 20
            while "channel layer is back" not in a.log_path.read_text(errors="replace"):
                assert time.monotonic() < deadline, f"no 'back' line within 20 s\n{a.log()}"
                await asyncio.sleep(0.2)
        finally:
            stream.close()
