"""Resuming a 2025 GET stream across a worker restart (embedded default: SQLite, one worker).

Events carry change-log positions as SSE ids; a publish committed while the worker was down
is replayed to a client that reconnects with ``Last-Event-ID``, once, and a reconnect from the
newest id replays nothing."""

from __future__ import annotations

import asyncio

import pytest

from .servers import (
    LEGACY,
    WATCHED,
    Server,
    SseStream,
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


async def _resume(port: int, sid: str, last_event_id: str) -> SseStream:
    return await SseStream.open(port, "GET", headers={"Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY,
                                                      "Accept": "text/event-stream",
                                                      "Last-Event-ID": last_event_id})


async def _drain(stream: SseStream, seconds: float) -> list[dict]:
    messages = []
    while True:
        try:
            messages.append(await stream.next_message(seconds))
        except TimeoutError:
            return messages


async def test_a_publish_made_while_the_worker_was_down_is_replayed_from_last_event_id(tmp_path):
    env = base_env(f"sqlite:///{tmp_path}/resume.sqlite3")
    prepare_database(env)
    first = Server("first", env, tmp_path).start()
    with logs_on_failure(first):
        try:
            sid = await legacy_initialize(first.port)
            assert await legacy_call(first.port, sid, "resources/subscribe", {"uri": WATCHED}) == {}
            stream = await open_get_stream(first.port, sid)
            await stream.expect_silence(0.5)
            assert stream.last_event_id is not None, "a 2025-11-25 GET stream is primed with an event id"
            receiving = asyncio.ensure_future(wait_updated(stream, WATCHED, 30))
            await amanage(env, "registry_import", str(changed_fixture(tmp_path, "One")), "--publish", "--note", "1")
            await receiving
            seen_id = stream.last_event_id
            stream.close()
        finally:
            first.stop()

    # The worker is down; a publish is committed meanwhile.
    await amanage(env, "registry_import", str(changed_fixture(tmp_path, "Two", "two.yaml")), "--publish",
                  "--note", "2")

    with Server("second", env, tmp_path) as second, logs_on_failure(second):
        resumed = await _resume(second.port, sid, seen_id)
        replayed = await _drain(resumed, 1.5)
        print(f"replayed after the restart: {[m['method'] for m in replayed]}")
        updated = [m for m in replayed if m["method"] == "notifications/resources/updated"]
        assert updated == [{"jsonrpc": "2.0", "method": "notifications/resources/updated",
                            "params": {"uri": WATCHED}}], replayed
        assert len({m["method"] for m in replayed}) == len(replayed), "replay is deduplicated"
        newest = resumed.last_event_id
        assert newest is not None and int(newest) > int(seen_id)
        resumed.close()

        again = await _resume(second.port, sid, newest)  # nothing happened since: nothing replayed
        assert await _drain(again, 1.0) == []
        again.close()
        read = await legacy_call(second.port, sid, "resources/read", {"uri": WATCHED}, rid=9)
        assert read["contents"][0]["text"] == "Two"
