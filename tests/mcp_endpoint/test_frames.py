"""Shared notification frames: a fan-out builds each distinct notification once per shape of
stream, and every stream still receives exactly the bytes a per-stream build would have made."""

from __future__ import annotations

import re

import pytest
from channels.db import database_sync_to_async

from mcp_endpoint.dispatch import streams
from mcp_endpoint.notify.diff import PROMPTS_CHANGED, RESOURCE_UPDATED, RESOURCES_CHANGED, Told
from mcp_endpoint.notify.frames import FrameCache, Shape, finish, subscription_tag
from mcp_endpoint.notify.hub import Hub
from mcp_endpoint.wire import jsonrpc, sse
from mcp_endpoint.wire.context import Identity, RequestContext
from mcp_endpoint.wire.sessions import Session
from mcp_endpoint.wire.versions import META_SUBSCRIPTION_ID
from registry import changes
from registry.changes import Change
from registry.models import PromptMessage
from registry.release import services
from registry.serving.catalogs import load_catalog
from registry.serving.viewer import Viewer
from tests.factories import make_prompt

LISTEN_META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
               "io.modelcontextprotocol/clientCapabilities": {}}


def listen_message(rid):
    return jsonrpc.classify({"jsonrpc": "2.0", "id": rid, "method": "subscriptions/listen", "params": {
        "notifications": {"promptsListChanged": True, "resourcesListChanged": True}, "_meta": LISTEN_META}})


def drained(queue):
    out = []
    while not queue.empty():
        out.append(queue.get_nowait())
    return out


def fresh():
    changes.bump_generation()
    return load_catalog("production")


def publish(entry):
    return services.publish(entry, acting_user=None, note="test", labels=("production",))


@pytest.mark.django_db(transaction=True)
async def test_listeners_hearing_the_same_notification_share_one_frame_build(monkeypatch):
    """N GET streams and N listen streams, set up as the transport sets them up, hear one prompt
    change: the notification is serialized once per wire generation, not once per stream, and
    every GET stream is handed the very same bytes object."""
    prompt = await database_sync_to_async(make_prompt)("greet")
    await database_sync_to_async(publish)(prompt)
    hub = Hub()
    monkeypatch.setattr(streams, "notification_hub", hub)
    identity = Identity(Viewer())
    n = 25
    try:
        get_streams = [await streams.session_stream(Session(f"session-{i}", "2025-06-18", persistent=False),
                                                    identity) for i in range(n)]
        listen_streams = [await streams.listen_stream(listen_message(i), RequestContext(
            "2026-07-28", True, identity, {})) for i in range(n)]
        hub.told["production"] = Told.of(await database_sync_to_async(fresh)())
        await database_sync_to_async(PromptMessage.objects.filter(prompt=prompt).update)(text="New {{ topic }}")
        await database_sync_to_async(publish)(prompt)
        new = await database_sync_to_async(fresh)()
        real_dumps, calls = jsonrpc.dumps, []

        def counting_dumps(obj):
            calls.append(obj)
            return real_dumps(obj)

        monkeypatch.setattr(jsonrpc, "dumps", counting_dumps)
        await hub._fan_out("production", new, [Change(1, "prompt", "greet", "production", True)], 41)
        monkeypatch.setattr(jsonrpc, "dumps", real_dumps)

        assert len(calls) == 2  # one per wire generation, for 2 * n streams
        got = [drained(stream.frames) for stream in get_streams]
        assert all(len(items) == 1 for items in got)
        assert len({id(items[0]) for items in got}) == 1  # one shared object
        listened = [drained(stream.frames) for stream in listen_streams]
        assert all(len(items) == 1 for items in listened)
    finally:
        await hub.stop()
    # What reaches the wire is what the per-stream build made.
    assert all(stream.framed for stream in get_streams + listen_streams)
    assert got[0][0] == sse.event(jsonrpc.encode_notification(PROMPTS_CHANGED), event_id="41")
    for rid, items in enumerate(listened):
        assert items[0] == sse.event(jsonrpc.encode_notification(
            PROMPTS_CHANGED, {"_meta": {META_SUBSCRIPTION_ID: rid}}))


@pytest.mark.parametrize("rid", [0, 7, 2**40, "abc", "é-ünï-中文", 'quote " and \\ backslash', 1.5])
@pytest.mark.parametrize("note", [(PROMPTS_CHANGED, None), (RESOURCES_CHANGED, None),
                                  (RESOURCE_UPDATED, {"uri": "docs://guide"}),
                                  (RESOURCE_UPDATED, {"uri": "docs://ä\u2028line?q=\"x\""})])
def test_a_shared_frame_is_byte_for_byte_the_per_listener_frame(rid, note):
    """Each shape's shared frame, finished with a listener's tag, equals what the per-listener
    render and SSE framing produced before frames were shared."""
    method, params = note
    position = 1234
    plain = jsonrpc.encode_notification(method, params)
    tagged = jsonrpc.encode_notification(method, {**(params or {}), "_meta": {META_SUBSCRIPTION_ID: rid}})
    tag = subscription_tag(rid)
    expected = {
        Shape(): plain,
        Shape(sse=True): sse.event(plain),
        Shape(event_ids=True): (plain, str(position)),
        Shape(sse=True, event_ids=True): sse.event(plain, event_id=str(position)),
        Shape(tagged=True): tagged,
        Shape(sse=True, tagged=True): sse.event(tagged),
    }
    for shape, want in expected.items():
        built = shape.build(method, params, position)
        assert finish(built, tag if shape.tagged else None) == want, shape


def test_a_fan_out_builds_each_notification_once_per_shape_across_listener_kinds():
    """Two kinds of listener (decided separately) that both hear list_changed share its frame."""
    cache = FrameCache(5)
    shape = Shape(sse=True, event_ids=True)
    one = [(PROMPTS_CHANGED, None)]
    other = [(PROMPTS_CHANGED, None), (RESOURCE_UPDATED, {"uri": "docs://x"})]
    first, second = cache.frames(one, shape), cache.frames(other, shape)
    assert second[0] is first[0]
    assert cache.frames(one, shape) is first
    assert re.match(rb"id: 5\nevent: message\ndata: ", second[1])
