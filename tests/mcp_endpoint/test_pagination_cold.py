"""List pages while no catalog is built: answered from the database, the catalog warming up
in the background (registry/serving/pages.py, registry/serving/warmup.py)."""

from __future__ import annotations

import asyncio
import json
import threading

import pytest
from channels.db import database_sync_to_async

from mcp_endpoint.dispatch.discovery import server_info
from mcp_endpoint.handlers import reads
from mcp_endpoint.handlers.catalogs import reset_caches
from mcp_endpoint.handlers.identity import anonymous, authenticate
from mcp_endpoint.handlers.lists import prompts_list, resource_templates_list, resources_list
from mcp_endpoint.handlers.prompts import prompts_get
from mcp_endpoint.wire.context import RequestContext
from registry import changes
from registry.release import services
from registry.serving import catalogs, warmup
from registry.serving.clients import create_client
from tests.factories import make_prompt

pytestmark = pytest.mark.django_db(transaction=True)

LISTS = [(prompts_list, "prompts"), (resources_list, "resources"),
         (resource_templates_list, "resourceTemplates")]


def ctx(identity=None, version="2026-07-28"):
    return RequestContext(version=version, modern=version == "2026-07-28", identity=identity or anonymous(),
                          server_info=server_info(version), session=None)


def no_catalog() -> None:
    """As just after a start: no fresh catalog and no cached result."""
    warmup.join()
    changes.bump_generation()
    reset_caches()


async def pages(handler, context, *, cold: bool) -> list[bytes]:
    out, cursor = [], None
    while True:
        if cold:
            no_catalog()
        raw = await handler(context, {"cursor": cursor} if cursor else {})
        out.append(raw.data)
        cursor = json.loads(raw.data).get("nextCursor")
        if not cursor:
            return out


async def warm_pages(handler, context, label: str) -> list[bytes]:
    no_catalog()
    await database_sync_to_async(catalogs.load_catalog)(label)
    return await pages(handler, context, cold=False)


@pytest.mark.parametrize("handler, field", LISTS, ids=[f for _h, f in LISTS])
@pytest.mark.parametrize("version", ["2026-07-28", "2025-11-25"])
async def test_database_pages_are_the_catalogs_pages_byte_for_byte(many_prompts, handler, field, version):
    cold = await pages(handler, ctx(version=version), cold=True)
    warm = await warm_pages(handler, ctx(version=version), "production")
    assert cold == warm
    assert len(cold) == (3 if field == "prompts" else 1)


@pytest.mark.parametrize("handler, field", LISTS[:2], ids=[f for _h, f in LISTS[:2]])
async def test_a_cold_walk_from_one_start_is_the_catalogs_walk_byte_for_byte(many_prompts, handler, field,
                                                                          monkeypatch):
    """Cold only at the start, the warm-up held back: the pages after the first come from the
    runs of the list read for earlier pages (registry/serving/page_runs.py), and are the warm pages."""
    no_catalog()
    monkeypatch.setattr(reads.source, "warm_catalog", lambda label: None)
    read = []
    real_page = reads.source.page_catalog
    monkeypatch.setattr(reads.source, "page_catalog", lambda *a: read.append(a) or real_page(*a))
    cold = await pages(handler, ctx(), cold=False)
    assert catalogs.cached_catalog("production") is None  # every page was served cold
    monkeypatch.undo()
    assert cold == await warm_pages(handler, ctx(), "production")
    assert 1 < len(read) < len(cold) if field == "prompts" else len(read) == len(cold) == 1


async def test_database_pages_of_a_scoped_client_on_another_label_are_the_catalogs(many_prompts):
    _client, token = await database_sync_to_async(create_client)(name="ops-staging", label="staging",
                                                                 scope_tags="ops")
    identity = await authenticate(f"Bearer {token}")
    for handler, _field in LISTS:
        cold = await pages(handler, ctx(identity), cold=True)
        assert cold == await warm_pages(handler, ctx(identity), "staging")


async def test_first_prompts_list_after_start_does_not_build_the_whole_catalog(many_prompts, monkeypatch):
    no_catalog()
    built, warmed, read = [], [], []
    monkeypatch.setattr(catalogs, "load_catalog", lambda label: built.append(label))
    monkeypatch.setattr(reads.source, "warm_catalog", lambda label: warmed.append((label, list(built))))
    real_read = catalogs.read_entries
    monkeypatch.setattr(catalogs, "read_entries", lambda label, ids: read.append(real_read(label, ids)) or read[-1])
    page = json.loads((await prompts_list(ctx(), {})).data)
    assert len(page["prompts"]) == 100 and page["nextCursor"]
    assert built == [] and warmed == [("production", [])]  # the build is started after the answer, not awaited
    assert len(read) == 1 and len(read[0].prompt_items) == 101 and not read[0].resource_items


def publish_new(user) -> None:
    prompt = make_prompt("aaa-new", arguments=[], messages=[{"role": "user", "kind": "text", "text": "fresh"}])
    services.publish(prompt, acting_user=user, note="during warm-up", override_reason="test")


async def test_publish_during_warm_up_is_served(many_prompts, monkeypatch):
    """A build that read the database before a publish finishes after it: lists read the
    database meanwhile, and a request for the whole catalog gets a build made after the publish."""
    no_catalog()
    finish, started = threading.Event(), threading.Event()
    real_load = catalogs.load_catalog

    def slow_load(label):
        built = real_load(label)
        started.set()
        finish.wait(30)
        return built

    monkeypatch.setattr(catalogs, "load_catalog", slow_load)
    await prompts_list(ctx(), {})
    assert started.wait(30)  # the warm-up has read the registry and is not done yet
    await database_sync_to_async(publish_new)(many_prompts)
    reset_caches()
    listed = json.loads((await prompts_list(ctx(), {})).data)["prompts"]
    assert listed[0]["name"] == "aaa-new"
    monkeypatch.setattr(catalogs, "load_catalog", real_load)
    finish.set()
    served = await prompts_get(ctx(), {"name": "aaa-new"})
    assert served["messages"][0]["content"]["text"] == "fresh"
    # prompts/get of one stored entry reads just that entry; the catalog asked for now is built after the publish
    rebuilt = await asyncio.wrap_future(warmup.warm("production"))
    assert rebuilt.prompt_items["aaa-new"].version == 1
