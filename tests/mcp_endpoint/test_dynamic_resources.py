"""Dynamic resources over MCP: their own caching hints on 2026-07-28, and resources/updated on change."""

from __future__ import annotations

import asyncio
import json

import pytest
from channels.db import database_sync_to_async

from mcp_endpoint.dispatch.discovery import server_info
from mcp_endpoint.handlers.catalogs import reset_caches
from mcp_endpoint.handlers.identity import anonymous
from mcp_endpoint.handlers.lists import resource_templates_list, resources_list
from mcp_endpoint.handlers.resources import resources_read
from mcp_endpoint.handlers.tools import tools_list
from mcp_endpoint.notify.diff import RESOURCE_UPDATED, Told
from mcp_endpoint.notify.hub import Hub
from mcp_endpoint.notify.listeners import Listener
from mcp_endpoint.wire.context import RequestContext
from mcp_endpoint.wire.jsonrpc import RawJSON
from registry import changes
from registry.changes import Change
from registry.models import ChangeLogEntry, PromptMessage
from registry.release import services
from registry.serving import dynamic
from registry.serving.catalogs import load_catalog
from registry.serving.viewer import Viewer
from tests.factories import make_prompt

RECENT = "registry://changes/recent"


def ctx(version="2026-07-28", identity=None):
    identity = identity or anonymous()
    return RequestContext(version=version, modern=version == "2026-07-28", identity=identity,
                          server_info=server_info(version))


def as_dict(result):
    return json.loads(result.data) if isinstance(result, RawJSON) else result


def publish(entry, labels=("production",)):
    return services.publish(entry, acting_user=None, actor="editor", note="test", labels=labels)


@pytest.mark.django_db(transaction=True)
async def test_dynamic_read_carries_the_providers_ttl_and_scope_on_2026_07_28(monkeypatch):
    await database_sync_to_async(publish)(await database_sync_to_async(make_prompt)("greet"))
    reset_caches()
    result = as_dict(await resources_read(ctx(), {"uri": RECENT}))
    assert result["ttlMs"] == 10_000 and result["cacheScope"] == "public"
    assert [c["mimeType"] for c in result["contents"]] == ["text/markdown", "application/json"]
    static = as_dict(await tools_list(ctx(), {}))
    assert static["ttlMs"] == ctx().ttl_ms  # other results keep the endpoint's default

    def secret(catalog, viewer, params, uri):
        return [{"uri": uri, "mimeType": "text/plain", "text": "per viewer"}]

    monkeypatch.setattr(dynamic, "PROVIDERS", list(dynamic.PROVIDERS))
    dynamic.provider(uri="registry://whoami", title="Who am I", mime_type="text/plain", ttl_ms=1234,
                     cache_scope="private")(secret)
    private = as_dict(await resources_read(ctx(), {"uri": "registry://whoami"}))
    assert (private["ttlMs"], private["cacheScope"]) == (1234, "private")
    legacy = as_dict(await resources_read(ctx("2025-11-25"), {"uri": RECENT}))
    assert "ttlMs" not in legacy and legacy["contents"][0]["uri"] == RECENT


@pytest.mark.django_db(transaction=True)
async def test_dynamic_resources_are_in_the_mcp_lists():
    reset_caches()
    listed = as_dict(await resources_list(ctx(), {}))
    templates = as_dict(await resource_templates_list(ctx(), {}))
    assert RECENT in [r["uri"] for r in listed["resources"]]
    assert "registry://prompts/{name}/changelog" in [t["uriTemplate"] for t in templates["resourceTemplates"]]


def render(method, params):
    return (method, params)


def heard(listener):
    out = []
    while not listener.queue.empty():
        out.append(listener.queue.get_nowait())
    return out


@pytest.mark.django_db
def test_a_publish_updates_subscribers_of_recent_changes_that_see_the_entry():
    prompt = make_prompt("greet", tags="billing")
    publish(prompt)
    publish(make_prompt("other"))
    hub = Hub()
    changes.bump_generation()
    hub.told["production"] = Told.of(load_catalog("production"))
    subscriber = Listener(Viewer(), render, uris={RECENT})
    in_scope = Listener(Viewer(scope_tags=frozenset({"billing"})), render, uris={RECENT})
    out_of_scope = Listener(Viewer(scope_tags=frozenset({"ops"})), render, uris={RECENT})
    own_log = Listener(Viewer(), render, prompts=False, uris={"registry://prompts/greet/changelog"})
    other_log = Listener(Viewer(), render, prompts=False, uris={"registry://prompts/other/changelog"})
    hub.listeners.update({subscriber, in_scope, out_of_scope, own_log, other_log})
    PromptMessage.objects.filter(prompt=prompt).update(text="New {{ topic }}")
    publish(prompt)
    changes.bump_generation()
    hub._announce("production", load_catalog("production"), [Change(1, "prompt", "greet", "production", True)], 1)
    assert (RESOURCE_UPDATED, {"uri": RECENT}) in heard(subscriber)
    assert (RESOURCE_UPDATED, {"uri": RECENT}) in heard(in_scope)
    assert heard(out_of_scope) == []
    assert heard(own_log) == [(RESOURCE_UPDATED, {"uri": "registry://prompts/greet/changelog"})]
    assert heard(other_log) == []


@pytest.mark.django_db(transaction=True)
async def test_a_committed_publish_reaches_a_recent_changes_subscriber_through_the_hub():
    prompt = await database_sync_to_async(make_prompt)("greet")
    await database_sync_to_async(publish)(prompt)
    hub = Hub()
    hub.loop = asyncio.get_running_loop()
    hub.lock = asyncio.Lock()
    hub.told["production"] = Told.of(await database_sync_to_async(load_catalog)("production"))
    listener = Listener(Viewer(), render, prompts=False, resources=False, uris={RECENT})
    hub.listeners.add(listener)

    def move_label():
        services.move_label(prompt, label="staging", version_number=1, acting_user=None, actor="editor")

    await database_sync_to_async(move_label)()
    newest = await database_sync_to_async(lambda: ChangeLogEntry.objects.order_by("-id").first())()
    await hub.process([Change(newest.id, "prompt", "greet", "staging", True)])
    assert heard(listener) == [(RESOURCE_UPDATED, {"uri": RECENT})]
