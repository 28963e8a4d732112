"""Session store: ids, the per-process cache window, and cross-process visibility."""

from __future__ import annotations

import pytest

from mcp_endpoint.models import McpSession
from mcp_endpoint.sessions import new_session_id, store, well_formed

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
    from mcp_endpoint import sessions

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
