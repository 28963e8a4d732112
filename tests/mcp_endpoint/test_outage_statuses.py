"""During a database outage every request that needs the database is answered HTTP 503 with a
JSON-RPC error body, on both wire generations; what needs no database keeps working."""

from __future__ import annotations

import json

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper

from mcp_endpoint.transport.consumers import McpHttpApp
from mcp_endpoint.wire.sessions import store

from .conftest import LEGACY, call_asgi, legacy_headers, modern_request, rpc


@pytest.fixture
def database_down(registry_data, anonymous_allowed, monkeypatch):
    """Every query fails as with PostgreSQL stopped (catalogs start cold: tests bump the generation)."""
    def refused(self, *args, **kwargs):
        raise OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')

    def down() -> None:
        monkeypatch.setattr(BaseDatabaseWrapper, "_cursor", refused)

    yield down
    monkeypatch.undo()


NEEDS_THE_DATABASE = [
    ("prompts/list", {}),
    ("prompts/get", {"name": "test_simple_prompt"}),
    ("resources/list", {}),
    ("resources/read", {"uri": "test://static-text"}),
    ("resources/templates/list", {}),
    ("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                             "argument": {"name": "arg1", "value": "te"}}),
    ("tools/call", {"name": "get_prompt", "arguments": {"name": "test_simple_prompt"}}),
]


def _assert_outage_reply(response, rid) -> None:
    assert response.status == 503, (response.status, response.body[:300])
    assert response.headers["content-type"] == "application/json"
    reply = response.json()
    assert reply["id"] == rid and reply["error"]["code"] == -32603
    assert "database is unreachable" in reply["error"]["message"]


@pytest.mark.parametrize("method, params", NEEDS_THE_DATABASE, ids=[m for m, _ in NEEDS_THE_DATABASE])
async def test_a_2026_request_that_needs_the_database_during_an_outage_is_a_503(database_down, method, params):
    database_down()
    headers, body = modern_request(method, params, rid=11)
    _assert_outage_reply(await call_asgi(McpHttpApp(), "POST", headers, body), 11)


async def test_a_2026_listen_whose_catalog_cannot_be_built_during_an_outage_is_a_503(database_down):
    database_down()
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}}, rid=12)
    _assert_outage_reply(await call_asgi(McpHttpApp(), "POST", headers, body), 12)


@pytest.mark.parametrize("method", ["server/discover", "tools/list"])
async def test_what_needs_no_database_is_still_answered_during_an_outage(database_down, method):
    database_down()
    headers, body = modern_request(method, rid=13)
    response = await call_asgi(McpHttpApp(), "POST", headers, body)
    assert response.status == 200 and "result" in response.json()


@pytest.mark.parametrize("method, params", NEEDS_THE_DATABASE[:4], ids=[m for m, _ in NEEDS_THE_DATABASE[:4]])
async def test_a_legacy_request_of_a_cached_session_that_needs_the_database_is_a_503(database_down, method, params):
    session = await store.create(protocol_version=LEGACY, client_info={}, client_capabilities={}, client_id=None)
    database_down()  # the session stays cached for a moment: the catalog is what needs the database
    response = await call_asgi(McpHttpApp(), "POST", legacy_headers(session.session_id), rpc(method, params, rid=14))
    _assert_outage_reply(response, 14)


async def test_a_legacy_batch_failed_by_the_outage_is_a_503_one_with_an_answer_is_not(database_down):
    session = await store.create(protocol_version="2025-03-26", client_info={}, client_capabilities={},
                                 client_id=None)
    database_down()
    headers = legacy_headers(session.session_id, version="2025-03-26")
    batch = json.dumps([json.loads(rpc("prompts/list", rid=1)), json.loads(rpc("resources/list", rid=2))]).encode()
    response = await call_asgi(McpHttpApp(), "POST", headers, batch)
    assert response.status == 503 and [r["error"]["code"] for r in response.json()] == [-32603, -32603]
    mixed = json.dumps([json.loads(rpc("ping", rid=3)), json.loads(rpc("prompts/list", rid=4))]).encode()
    response = await call_asgi(McpHttpApp(), "POST", headers, mixed)
    assert response.status == 200 and "result" in response.json()[0] and "error" in response.json()[1]
