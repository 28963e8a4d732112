"""Scale-out (issue 4, item 5): two workers started as production starts them (`manage.py serve`,
uvicorn; issue 24) share one PostgreSQL registry and one Redis
channel layer. A 2025-11-25 session initialized on worker A is used through worker B; a legacy
GET stream and a 2026-07-28 ``subscriptions/listen`` stream are open on A; publishes committed by
other processes (``manage.py registry_import --publish`` with REDIS_URL set, and the REST import
served by worker B) reach both listeners on A. The receipt latency is printed.

Services come from the environment (``.ci/run`` sets both):
    TEST_POSTGRES_URL  e.g. postgres://postgres@127.0.0.1:5432/test; the test creates its own
                       database ``mcp_scale_<random>`` there and drops it afterwards;
    TEST_REDIS_URL     e.g. redis://127.0.0.1:6379/0.
Unset -> skipped with the reason; set but unreachable -> failed (in CI they must work).

Redis isolation: the test writes no keys and never flushes. The channel layer only publishes on
pub/sub channels, which Redis shares across all DB numbers, and the project's layer uses the
default ``asgi`` prefix; the change-event group is named after the database
(``mcp.registry-changes.<hash of the database>``), so runs on fresh databases, like registries on
different databases, never take each other's events, even on one shared Redis.
"""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from urllib.parse import urlsplit, urlunsplit

import pytest

from .servers import (
    FIXTURE,
    SUB_ID_KEY,
    WATCHED,
    WATCHED_TEXT,
    Server,
    amanage,
    base_env,
    changed_fixture,
    legacy_call,
    legacy_initialize,
    logs_on_failure,
    manage,
    open_get_stream,
    open_listen,
    prepare_database,
    request,
    wait_updated,
)

pytestmark = [pytest.mark.e2e, pytest.mark.services]

SERVE = ["manage.py", "serve", "--port", "{port}", "--workers", "1"]
RECEIPT_BOUND = 5.0  # seconds after the commit; the Redis path takes milliseconds, the catch-up poller ~0.5 s
WRITE_BOUND = 60.0  # how long the write itself may take (a loaded CI machine starts a process slowly)
REDIS_GROUP_PATTERN = "asgi__group__mcp.registry-changes.*"  # channels_redis pub/sub names of hub.changes_group()


def _service_urls() -> tuple[str, str]:
    pg, rd = os.environ.get("TEST_POSTGRES_URL"), os.environ.get("TEST_REDIS_URL")
    missing = [name for name, value in (("TEST_POSTGRES_URL", pg), ("TEST_REDIS_URL", rd)) if not value]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not set: the two-worker PostgreSQL+Redis test needs them "
                    "(CI sets them)")
    return pg, rd  # type: ignore[return-value]


@pytest.fixture
def postgres_database():
    """A fresh PostgreSQL database for this test only; dropped afterwards."""
    admin_url, _ = _service_urls()
    import psycopg

    try:
        admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    except Exception as exc:  # set but unreachable: a broken CI machine, not a skip
        pytest.fail(f"TEST_POSTGRES_URL={admin_url} is set but PostgreSQL is unreachable: {exc}")
    name = f"mcp_scale_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(admin_url)
    try:
        yield urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    finally:
        try:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            admin.close()


@pytest.fixture
def redis_url():
    _, url = _service_urls()
    import redis

    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=5, socket_timeout=5)
        client.ping()
        client.close()
    except Exception as exc:
        pytest.fail(f"TEST_REDIS_URL={url} is set but Redis is unreachable: {exc}")
    return url


class RedisWatch:
    """Records when change events cross Redis on the hub's group channel (evidence that the
    channel layer, not only the change-log catch-up, carried them)."""

    def __init__(self, url: str) -> None:
        import redis.asyncio as aioredis

        self.client = aioredis.Redis.from_url(url)
        self.pubsub = self.client.pubsub()
        self.events: list[tuple[float, bytes]] = []
        self.task: asyncio.Task | None = None

    async def start(self) -> None:
        await self.pubsub.psubscribe(REDIS_GROUP_PATTERN)
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        while True:
            message = await self.pubsub.get_message(ignore_subscribe_messages=True, timeout=1.0)
            if message is not None and message.get("type") in ("message", "pmessage"):
                self.events.append((time.monotonic(), message["data"]))

    def changes_since(self, t: float) -> list[tuple[float, bytes]]:
        return [(at, data) for at, data in self.events if at >= t and b"registry.changed" in data]

    async def stop(self) -> None:
        if self.task is not None:
            self.task.cancel()
        await self.pubsub.aclose()
        await self.client.aclose()


async def _receive_both(legacy, listen, sub_id: int) -> tuple[float, float]:
    async def one(stream, check) -> float:
        try:
            message = await wait_updated(stream, WATCHED, WRITE_BOUND + RECEIPT_BOUND)
        except AssertionError as exc:
            raise AssertionError(f"{'legacy GET stream' if check is plain else 'listen stream'} on A: {exc}") from None
        at = time.monotonic()
        check(message)
        return at

    def plain(message):
        assert message["params"] == {"uri": WATCHED}, message

    def tagged(message):
        assert message["params"] == {"uri": WATCHED, "_meta": {SUB_ID_KEY: sub_id}}, message

    return tuple(await asyncio.gather(one(legacy, plain), one(listen, tagged)))  # type: ignore[return-value]


async def _received_after(receiving: asyncio.Future, what: str) -> tuple[float, float]:
    """Both streams' receipt times, which must come within RECEIPT_BOUND of the write's commit.

    The streams are read from before the write starts (nothing may be missed), but the bound
    counts from its end: a process that takes 4 s to start under load is no late notification."""
    try:
        return await asyncio.wait_for(asyncio.shield(receiving), RECEIPT_BOUND)
    except TimeoutError:
        receiving.cancel()
        raise AssertionError(
            f"{what}: no notification on both streams within {RECEIPT_BOUND} s of the commit") from None


async def test_two_workers_share_sessions_and_deliver_publishes_across_redis(postgres_database, redis_url, tmp_path):
    env = base_env(postgres_database, redis_url)
    prepare_database(env)
    token = manage(env, "shell", "-c", (
        "from django.contrib.auth import get_user_model\n"
        "from rest_framework.authtoken.models import Token\n"
        "u = get_user_model().objects.create_superuser('e2e-admin', 'e2e@example.com', 'e2e-password-1')\n"
        "print(Token.objects.create(user=u).key)")).stdout.strip().splitlines()[-1]

    # Both workers as production starts them (manage.py serve: uvicorn); two daphne workers over
    # Redis are tests/e2e/test_redis_outage.py's and test_revocation.py's.
    a, b = Server("worker-a", env, tmp_path, command=SERVE), Server("worker-b", env, tmp_path, command=SERVE)
    with a, b, logs_on_failure(a, b):
        watch = RedisWatch(redis_url)
        await watch.start()
        legacy = listen = None
        try:
            # (a) a 2025-11-25 session opened on A, used through B.
            sid = await legacy_initialize(a.port)
            names = {p["name"] for p in (await legacy_call(b.port, sid, "prompts/list"))["prompts"]}
            assert "test_simple_prompt" in names
            assert await legacy_call(b.port, sid, "resources/subscribe", {"uri": WATCHED}, rid=3) == {}
            # ... and through A again at once (A still caches the session from initialize): both
            # subscriptions must survive.
            assert await legacy_call(a.port, sid, "resources/subscribe", {"uri": "test://static-text"}, rid=4) == {}

            # (b) both stream kinds open on A.
            legacy = await open_get_stream(a.port, sid)
            listen, _ack = await open_listen(a.port, [WATCHED], rid=77)

            # (c1) a publish committed by a separate process connected to Redis.
            receiving = asyncio.ensure_future(_receive_both(legacy, listen, 77))  # read while it runs
            t0 = time.monotonic()
            await amanage(env, "registry_import", str(changed_fixture(tmp_path, "Published by a command")),
                          "--publish", "--note", "change")
            exited = time.monotonic()
            got = await _received_after(receiving, "registry_import")
            crossed = watch.changes_since(t0)
            assert crossed, "the command's change never crossed Redis (channel layer not used)"
            from_redis = [at - crossed[0][0] for at in got]
            print(f"scale-out, registry_import: received {from_redis[0] * 1000:.1f} ms (GET) / "
                  f"{from_redis[1] * 1000:.1f} ms (listen) after the event crossed Redis; "
                  f"{(max(got) - exited) * 1000:+.1f} ms relative to the command's exit")

            # (c2) a publish through worker B's REST API (the REST import, as a superuser with an
            # audited override of the protected production label).
            document = FIXTURE.read_text(encoding="utf-8").replace(WATCHED_TEXT, 'text: "Published through B"')
            receiving = asyncio.ensure_future(_receive_both(legacy, listen, 77))
            t1 = time.monotonic()
            status, _headers, body = await request(
                b.port, "POST", "/api/v1/import/",
                headers={"Authorization": f"Token {token}", "Accept": "application/json"},
                json_body={"document": document, "publish": True, "note": "via worker B",
                           "filename": "changed.yaml", "override_reason": "e2e scale-out test"}, timeout=20)
            answered = time.monotonic()
            if status != 200:
                receiving.cancel()
            assert status == 200, body[:2000]
            got = await _received_after(receiving, "REST import on B")
            crossed = watch.changes_since(t1)
            assert crossed, "worker B's change never crossed Redis"
            print(f"scale-out, REST on B: received {(got[0] - t1) * 1000:.1f} ms (GET) / "
                  f"{(got[1] - t1) * 1000:.1f} ms (listen) after the request was sent, "
                  f"{(max(got) - answered) * 1000:+.1f} ms relative to B's response; "
                  f"{(max(got) - crossed[0][0]) * 1000:.1f} ms after the event crossed Redis")

            # Exactly once per publish: nothing more arrives by the catch-up route.
            await asyncio.gather(legacy.expect_silence(1.0), listen.expect_silence(1.0))

            # Both workers serve the new text.
            for port in (a.port, b.port):
                read = await legacy_call(port, sid, "resources/read", {"uri": WATCHED}, rid=9)
                assert read["contents"][0]["text"] == "Published through B"
        finally:
            for stream in (legacy, listen):
                if stream is not None:
                    stream.close()
            await watch.stop()
