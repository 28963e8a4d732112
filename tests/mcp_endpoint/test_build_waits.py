"""The endpoint marks what a background catalog build gives way to (registry/serving/yielding.py):
each request it serves, over stdio too, and, as not to be given way to, a listen that waits for
the label's first catalog."""

import asyncio
from concurrent.futures import Future

import pytest
from channels.db import database_sync_to_async

from mcp_endpoint.dispatch import stdio
from mcp_endpoint.handlers.identity import anonymous
from mcp_endpoint.notify import hub as hub_module
from mcp_endpoint.notify.hub import Hub
from mcp_endpoint.notify.listeners import Listener
from registry.serving import yielding
from registry.serving.catalogs import load_catalog
from registry.serving.viewer import Viewer


def render(method, params):
    return (method, params)


async def test_a_stdio_line_is_counted_as_served_while_it_is_handled(monkeypatch):
    seen: list[int] = []

    async def handled(obj, state):
        seen.append(yielding.requests_served())
        return b"{}"

    monkeypatch.setattr(stdio, "_one", handled)
    line = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    assert await stdio.handle_line(line, stdio.StdioState(identity=anonymous())) == b"{}"
    assert seen == [1] and yielding.requests_served() == 0


@pytest.mark.django_db(transaction=True)
async def test_a_listen_waiting_for_the_labels_first_catalog_is_not_given_way_to(monkeypatch):
    pending: Future = Future()
    monkeypatch.setattr(hub_module, "warm", lambda label: pending)
    hub = Hub()
    try:
        with yielding.serving():  # the listen request
            registering = asyncio.ensure_future(hub.register(Listener(Viewer(), render)))
            for _ in range(50):
                await asyncio.sleep(0.01)
                if yielding.builds_awaited():
                    break
            assert yielding.builds_awaited() == 1 and yielding.requests_served() == 0
            pending.set_result(await database_sync_to_async(load_catalog)("production"))
            await registering
            assert yielding.builds_awaited() == 0 and yielding.requests_served() == 1
        assert len(hub.listeners) == 1
    finally:
        await hub.stop()
