"""The catch-up poller against out-of-order commits, and the catalog consistency check.

Change-log ids come from a sequence; on PostgreSQL a long transaction (a large import) takes
low ids and commits after a short one with higher ids. The hub here is a separate instance
that only hears about changes through its poller, exactly like another worker process.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from channels.db import database_sync_to_async
from django.db import connection, transaction

from mcp_endpoint.notify.diff import PROMPTS_CHANGED
from mcp_endpoint.notify.hub import Hub
from mcp_endpoint.notify.listeners import Listener
from mcp_endpoint.settings import mcp_settings
from registry.changes import record_change
from registry.models import PromptMessage
from registry.release import services
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
from tests.factories import make_prompt

pytestmark = pytest.mark.django_db(transaction=True)

LONG_ENTRIES = 6      # real content changes in the long transaction (lowest ids)
FILLER = 400          # further change-log rows of the long transaction, so its real ids sit far below


def publish(entry):
    services.publish(entry, acting_user=None, note="test", labels=("production",), override_reason="test data")
    return entry


def change_and_publish(prompt):
    PromptMessage.objects.filter(prompt=prompt).update(text=f"Changed {{{{ topic }}}} {time.monotonic()}")
    publish(prompt)


def render(method, params):
    return (method, params)


def heard(listener):
    out = []
    while not listener.queue.empty():
        out.append(listener.queue.get_nowait())
    return out


async def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while not await predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what} within {timeout} s")
        await asyncio.sleep(0.05)


@pytest.fixture
async def fast_poller(settings):
    from django.db import connections

    settings.MCP_ENDPOINT = {"CHANGE_POLL_SECONDS": 0.1, "CONSISTENCY_CHECK_SECONDS": 3600}
    mcp_settings.reload()
    yield
    mcp_settings.reload()
    await database_sync_to_async(connections.close_all)()  # the hub's thread: let the test database go


async def test_a_long_transaction_committing_after_a_short_one_is_never_skipped(fast_poller):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL (DATABASE_URL=postgres://...; `make test` runs it there): SQLite "
                    "serialises writers, so its ids always commit in order")
    prompts = await database_sync_to_async(lambda: [publish(make_prompt(f"long-{i}")) for i in range(LONG_ENTRIES)])()
    short = await database_sync_to_async(lambda: publish(make_prompt("short")))()
    hub = Hub()
    listener = Listener(Viewer(), render)
    await hub.register(listener)
    long_ready, short_done, failures = threading.Event(), threading.Event(), []

    def long_import():
        try:
            with transaction.atomic():
                for prompt in prompts:
                    change_and_publish(prompt)
                for i in range(FILLER):
                    record_change(kind="prompt", key=f"filler-{i}", label="production", list_changed=True)
                long_ready.set()
                assert short_done.wait(30), "the short transaction never committed"
        except BaseException as exc:  # reported by the test
            failures.append(exc)
            long_ready.set()
        finally:
            connection.close()

    worker = threading.Thread(target=long_import)
    worker.start()
    try:
        assert await asyncio.to_thread(long_ready.wait, 30) and not failures, failures
        await database_sync_to_async(change_and_publish)(short)  # commits first, with the highest ids

        async def short_heard():
            return await asyncio.to_thread(lambda: listener.queue.qsize() > 0)

        await wait_for(short_heard, 10, "the short transaction's change was not announced")
        assert heard(listener) == [(PROMPTS_CHANGED, None)]
    finally:
        short_done.set()
        await asyncio.to_thread(worker.join, 30)
    assert not failures, failures

    async def all_served():
        catalog = hub.told["production"]
        return all(catalog.prompt_items[p.name].version == 2 for p in prompts)

    try:
        await wait_for(all_served, 10, "the long transaction's entries were still served stale")
        assert heard(listener) == [(PROMPTS_CHANGED, None)]  # announced once it committed
        served = await database_sync_to_async(catalog_for)("production")
        assert {p.name: served.prompt_items[p.name].version for p in prompts} == {p.name: 2 for p in prompts}
    finally:
        await hub.stop()


async def test_a_catalog_that_missed_a_change_is_rebuilt_and_announced_by_the_consistency_check(fast_poller):
    from registry.models import ChangeLogEntry

    prompt = await database_sync_to_async(lambda: publish(make_prompt("greet")))()
    hub = Hub()
    listener = Listener(Viewer(), render)
    await hub.register(listener)
    await hub.stop()  # no poller: this hub will not read the next change by itself
    await database_sync_to_async(change_and_publish)(prompt)  # production now serves v2
    # A lost change, as a gap given up on would be: its id counts as applied, never delivered.
    top = await database_sync_to_async(lambda: ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True)
                                       .first())()
    hub.ids.done(hub.ids.claim(range(hub.ids.top + 1, top + 1)))
    assert hub.told["production"].prompt_items["greet"].version == 1
    assert await hub.check_consistency() == 1
    assert hub.told["production"].prompt_items["greet"].version == 2
    assert heard(listener) == [(PROMPTS_CHANGED, None)]
    served = await database_sync_to_async(catalog_for)("production")
    assert served.prompt_items["greet"].version == 2
    assert await hub.check_consistency() == 0  # consistent now: nothing more is rebuilt or sent
    assert heard(listener) == []


async def _hub_that_lost_a_snippet_release():
    """A hub with one production listener whose poller is stopped, after snippet 'style' v2 was
    released to production (a prompt 'reply' follows it) and its change rows counted as applied,
    never delivered: lost, as a gap given up on would be."""
    from registry.models import ChangeLogEntry, Snippet
    from tests.factories import make_snippet

    def setup():
        snippet = make_snippet("style", text="Be brief.")
        publish(snippet)
        publish(make_prompt("reply", messages=[{"role": "user", "kind": "text", "text": "{{> style }} {{ topic }}"}]))
        publish(make_prompt("plain"))
        return snippet

    snippet = await database_sync_to_async(setup)()
    hub = Hub()
    listener = Listener(Viewer(), render)
    await hub.register(listener)
    await hub.stop()  # no poller: this hub will not read the next change by itself

    def release_v2():
        Snippet.objects.filter(pk=snippet.pk).update(text="Be warm.")
        publish(Snippet.objects.get(pk=snippet.pk))

    await database_sync_to_async(release_v2)()
    top = await database_sync_to_async(lambda: ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True)
                                       .first())()
    hub.ids.done(hub.ids.claim(range(hub.ids.top + 1, top + 1)))
    return hub, listener


async def test_a_snippet_release_that_never_reached_a_worker_is_found_and_its_followers_announced(fast_poller):
    """The consistency check compares the snippet rows a catalog resolved its composed entries
    from with the database (it compared only the entries' own rows: a lost snippet release left
    every follower's text stale until the next full build, with no listener told)."""
    hub, listener = await _hub_that_lost_a_snippet_release()
    assert hub.told["production"].prompt_items["reply"].parts == (("style", 1),)
    assert await hub.check_consistency() == 1  # the snippet row
    assert hub.told["production"].prompt_items["reply"].parts == (("style", 2),)
    assert heard(listener) == [(PROMPTS_CHANGED, None)]
    served = await database_sync_to_async(catalog_for)("production")
    text = await database_sync_to_async(lambda: served.get_prompt(Viewer(), "reply", {"topic": "x"}).result)()
    assert text["messages"][0]["content"]["text"] == "Be warm. x"
    assert await hub.check_consistency() == 0
    assert heard(listener) == []


async def test_a_lost_snippet_release_a_full_rebuild_then_picked_up_is_still_announced(fast_poller):
    """The catalog may have the release (rebuilt whole since) while listeners were never told of it:
    the check compares what they were told of each follower's snippet versions with the catalog."""
    from registry.serving.catalogs import forget_catalogs

    hub, listener = await _hub_that_lost_a_snippet_release()
    forget_catalogs()
    await database_sync_to_async(catalog_for)("production")  # rebuilt whole: the catalog has v2
    assert await hub.check_consistency() == 1
    assert heard(listener) == [(PROMPTS_CHANGED, None)]
    assert hub.told["production"].prompt_items["reply"].parts == (("style", 2),)
    assert await hub.check_consistency() == 0
