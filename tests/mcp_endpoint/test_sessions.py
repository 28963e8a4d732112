"""Session store: ids, the per-process cache window, and cross-process visibility."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from mcp_endpoint.models import McpSession
from mcp_endpoint.wire.sessions import new_session_id, store, well_formed

pytestmark = pytest.mark.django_db(transaction=True)


def test_session_ids_are_random_visible_ascii():
    ids = {new_session_id() for _ in range(100)}
    assert len(ids) == 100
    assert all(well_formed(i) and len(i) == 32 for i in ids)
    assert not well_formed("has space") and not well_formed("") and not well_formed("x" * 65)


async def create():
    return await store.create(protocol_version="2025-11-25", client_info={"name": "t"},
                              client_capabilities={}, client_id=None)


async def test_cached_session_is_served_without_the_database_inside_the_window(settings):
    settings.MCP_ENDPOINT = {"SESSION_CACHE_SECONDS": 60}
    session = await create()
    await McpSession.objects.filter(pk=session.session_id).adelete()
    assert await store.get(session.session_id) is session  # still trusted from this process's cache


async def test_other_processes_see_a_session_from_the_database(settings):
    session = await create()
    store.clear_cache()  # as if this request landed on another worker
    loaded = await store.get(session.session_id)
    assert loaded is not None and loaded.protocol_version == "2025-11-25"


async def test_end_is_visible_once_the_window_has_passed(settings):
    settings.MCP_ENDPOINT = {"SESSION_CACHE_SECONDS": 0}
    session = await create()
    await McpSession.objects.filter(pk=session.session_id).aupdate(ended=True)
    assert await store.get(session.session_id) is None


async def test_end_reports_whether_a_live_session_was_ended():
    session = await create()
    assert await store.end(session.session_id) is True
    assert await store.end(session.session_id) is False
    assert await store.get(session.session_id) is None


async def test_idle_sessions_expire(settings):
    from datetime import timedelta

    from django.utils import timezone

    settings.MCP_ENDPOINT = {"SESSION_CACHE_SECONDS": 0, "SESSION_IDLE_SECONDS": 60}
    session = await create()
    await McpSession.objects.filter(pk=session.session_id).aupdate(last_seen=timezone.now() - timedelta(hours=1))
    assert await store.get(session.session_id) is None


async def test_malformed_ids_are_unknown_without_a_query(monkeypatch):
    from mcp_endpoint.wire import sessions

    async def no_query(*args):
        raise AssertionError("queried the database")

    monkeypatch.setattr(sessions, "_db_load", no_query)
    assert await store.get("bad id with spaces") is None


def test_prune_deletes_expired_and_long_ended_sessions_only(settings):
    from datetime import timedelta

    from django.core.management import call_command
    from django.utils import timezone

    settings.MCP_ENDPOINT = {"SESSION_IDLE_SECONDS": 60}
    old = timezone.now() - timedelta(hours=2)
    McpSession.objects.create(session_id="live", protocol_version="2025-11-25")
    McpSession.objects.create(session_id="idle", protocol_version="2025-11-25")
    McpSession.objects.create(session_id="ended-long-ago", protocol_version="2025-11-25", ended=True)
    McpSession.objects.create(session_id="ended-just-now", protocol_version="2025-11-25", ended=True)
    McpSession.objects.filter(session_id__in=["idle", "ended-long-ago"]).update(last_seen=old)
    call_command("mcp_prune_sessions", keep_ended=60)
    assert set(McpSession.objects.values_list("session_id", flat=True)) == {"live", "ended-just-now"}


# ------------------------------------------------------------------ bounds
def test_peer_key_counts_ipv4_addresses_and_ipv6_networks():
    from mcp_endpoint.wire.sessions import peer_key

    assert peer_key(("203.0.113.7", 5000)) == "203.0.113.7"
    assert peer_key(["2001:db8:1:2:aaaa::1", 5000]) == peer_key(("2001:db8:1:2:bbbb::9", 1)) == "2001:db8:1:2::/64"
    assert peer_key(("2001:db8:1:3::1", 1)) != peer_key(("2001:db8:1:2::1", 1))
    assert peer_key(("::ffff:203.0.113.7", 1)) == "203.0.113.7"
    assert peer_key(None) == peer_key(()) == "unknown"


async def open_session(client_id=None, peer=""):
    return await store.create(protocol_version="2025-11-25", client_info={"name": "t"},
                              client_capabilities={}, client_id=client_id, peer=peer)


async def live(session) -> bool:
    store.clear_cache()
    return await store.get(session.session_id) is not None


async def test_a_client_past_its_session_limit_loses_its_least_recently_used_session(settings):
    settings.MCP_ENDPOINT = {"MAX_SESSIONS_PER_CLIENT": 3}
    first, *rest = [await open_session(client_id=7) for _ in range(3)]
    other_client = await open_session(client_id=8)
    newest = await open_session(client_id=7)
    assert not await live(first)
    assert all([await live(s) for s in (*rest, newest, other_client)])
    assert await McpSession.objects.filter(client_id=7, ended=False).acount() == 3


async def test_a_session_in_use_is_kept_over_an_idle_one(settings):
    settings.MCP_ENDPOINT = {"MAX_SESSIONS_PER_CLIENT": 2}
    first, second = await open_session(client_id=7), await open_session(client_id=7)
    await McpSession.objects.filter(pk=second.session_id).aupdate(last_seen=timezone.now() - timedelta(hours=1))
    await open_session(client_id=7)
    assert await live(first) and not await live(second)


async def test_anonymous_sessions_are_bounded_per_network_not_shared_with_everyone(settings):
    settings.MCP_ENDPOINT = {"MAX_SESSIONS_PER_CLIENT": 2}
    bystander = await open_session(peer="198.51.100.1")
    flood = [await open_session(peer="203.0.113.9") for _ in range(50)]
    assert await live(bystander)
    assert [await live(s) for s in flood[-3:]] == [False, True, True]
    assert await McpSession.objects.filter(peer="203.0.113.9", ended=False).acount() == 2


async def test_all_anonymous_sessions_together_are_bounded(settings):
    settings.MCP_ENDPOINT = {"MAX_SESSIONS_PER_CLIENT": 5, "MAX_ANONYMOUS_SESSIONS": 3}
    token_session = await open_session(client_id=1)
    sessions = [await open_session(peer=f"203.0.113.{n}") for n in range(4)]
    assert not await live(sessions[0]) and all([await live(s) for s in sessions[1:]])
    assert await live(token_session)


async def test_deeply_nested_client_info_or_capabilities_are_invalid_params_not_an_internal_error():
    """orjson stops serialising at 254 levels: an initialize nesting its capabilities deeper was
    answered -32603 with a traceback in the log."""
    from mcp_endpoint.wire.errors import InvalidParams

    deep: dict = {}
    inner = deep
    for _ in range(300):
        inner["a"] = {}
        inner = inner["a"]
    for info, caps, field in (({"name": "t", "x": deep}, {}, "clientInfo"), ({"name": "t"}, deep, "capabilities")):
        with pytest.raises(InvalidParams) as caught:
            await store.create(protocol_version="2025-11-25", client_info=info, client_capabilities=caps,
                               client_id=None)
        assert caught.value.data["field"] == field and "nested too deeply" in caught.value.message
    assert await McpSession.objects.acount() == 0


async def test_oversized_client_info_or_capabilities_are_refused_and_store_nothing(settings):
    from mcp_endpoint.wire.errors import InvalidParams

    settings.MCP_ENDPOINT = {"MAX_CLIENT_INFO_BYTES": 100}
    for info, caps, field in (({"name": "x" * 200}, {}, "clientInfo"),
                              ({"name": "t"}, {"x": "y" * 200}, "capabilities")):
        with pytest.raises(InvalidParams) as caught:
            await store.create(protocol_version="2025-11-25", client_info=info, client_capabilities=caps,
                               client_id=None)
        assert caught.value.data["field"] == field and field in caught.value.message
    assert await McpSession.objects.acount() == 0
