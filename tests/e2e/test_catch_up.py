"""Embedded default (SQLite file, no REDIS_URL, so no channel layer between processes): a publish
made by ``manage.py registry_import --publish`` in a separate process reaches the running
server's listeners through the change-log catch-up alone (issue 4, item 5, second test), and a
change to a draft only reaches nobody."""

from __future__ import annotations

import asyncio
import time

import pytest

from .servers import (
    SUB_ID_KEY,
    WATCHED,
    Server,
    amanage,
    base_env,
    changed_fixture,
    legacy_call,
    legacy_initialize,
    logs_on_failure,
    open_get_stream,
    open_listen,
    prepare_database,
    wait_updated,
)

pytestmark = pytest.mark.e2e

CATCH_UP_BOUND = 2.0   # seconds after the importing process exits (the poller ticks every 0.5 s)
DRAFT_SILENCE = 1.5    # seconds of silence required after a draft-only change


@pytest.fixture
def embedded(tmp_path):
    env = base_env(f"sqlite:///{tmp_path}/catch-up.sqlite3")
    assert "REDIS_URL" not in env
    prepare_database(env)
    with Server("daphne", env, tmp_path) as server:
        yield env, server, tmp_path


async def test_publish_from_another_process_reaches_both_listeners_through_catch_up(embedded):
    env, server, tmp = embedded
    port = server.port
    with logs_on_failure(server):
        sid = await legacy_initialize(port)
        assert await legacy_call(port, sid, "resources/subscribe", {"uri": WATCHED}) == {}
        legacy = await open_get_stream(port, sid)
        listen, _ack = await open_listen(port, [WATCHED], rid=41)
        try:
            # A draft-only change (no --publish): nothing the clients are served changed.
            draft = changed_fixture(tmp, "Draft text nobody is served yet", name="draft.yaml")
            await amanage(env, "registry_import", str(draft), "--note", "draft only")
            await asyncio.gather(legacy.expect_silence(DRAFT_SILENCE), listen.expect_silence(DRAFT_SILENCE))

            # The publish, committed by another process with no channel layer to the server.
            published = changed_fixture(tmp, "Published by another process")
            arrived: list[float] = []

            async def receive(stream):
                message = await wait_updated(stream, WATCHED, 60)  # bounded below, from the exit
                arrived.append(time.monotonic())
                return message

            receiving = asyncio.gather(receive(legacy), receive(listen))  # read while the import runs
            started = time.monotonic()
            await amanage(env, "registry_import", str(published), "--publish", "--note", "x")
            exited = time.monotonic()
            try:
                got_legacy, got_listen = await asyncio.wait_for(receiving, CATCH_UP_BOUND)
            except TimeoutError:
                raise AssertionError(f"not both listeners notified within {CATCH_UP_BOUND} s of the "
                                     f"import's exit ({len(arrived)} were)") from None
            print(f"catch-up: import ran {exited - started:.2f} s; notifications arrived "
                  + ", ".join(f"{at - exited:+.3f} s" for at in arrived) + " relative to its exit")
            assert got_legacy == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                                  "params": {"uri": WATCHED}}
            assert got_listen["params"] == {"uri": WATCHED, "_meta": {SUB_ID_KEY: 41}}

            # Exactly once: no duplicate arrives by another route.
            await asyncio.gather(legacy.expect_silence(1.0), listen.expect_silence(1.0))

            # And the server now serves the new text.
            read = await legacy_call(port, sid, "resources/read", {"uri": WATCHED}, rid=9)
            assert read["contents"][0]["text"] == "Published by another process"
        finally:
            legacy.close()
            listen.close()
