"""A composed prompt whose snippet has no version to serve answers a clear JSON-RPC error, not a crash."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from mcp_endpoint.transport.consumers import McpHttpApp
from tests.factories import make_prompt, make_snippet, release
from tests.mcp_endpoint.conftest import call_asgi, modern_request

pytestmark = pytest.mark.usefixtures("anonymous_allowed", "content_store")


@database_sync_to_async
def haunted_prompt() -> None:
    release(make_snippet("ghost"), labels=("staging",))  # nothing on production, which the prompt follows
    release(make_prompt("haunted", messages=[{"role": "user", "kind": "text", "text": "{{> ghost }} {{ topic }}"}]))


async def test_a_snippet_with_no_version_to_serve_is_a_json_rpc_error_naming_it(transactional_db):
    await haunted_prompt()
    headers, body = modern_request("prompts/get", {"name": "haunted", "arguments": {"topic": "x"}})
    answer = (await call_asgi(McpHttpApp(), "POST", headers, body)).json()
    assert answer["error"]["code"] == -32603
    assert "snippet ghost has no version to serve" in answer["error"]["message"]
