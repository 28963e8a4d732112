"""A snippet's rollout over HTTP, with real client tokens on one label: the client whose bucket by
the snippet's name is in the share hears of the dependent prompt and resource and reads the
candidate in both; the client outside hears nothing and reads the label's version."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async
from channels.testing import ApplicationCommunicator

from mcp_endpoint.notify.diff import PROMPTS_CHANGED, RESOURCE_UPDATED
from mcp_endpoint.transport.consumers import McpHttpApp
from registry.formats.buckets import gets_candidate
from registry.models import Snippet
from registry.release.rollouts import set_rollout
from registry.serving.clients import create_client, forget_cached_tokens
from tests.factories import make_prompt, make_resource, make_snippet, release
from tests.mcp_endpoint.conftest import asgi_scope, call_asgi, modern_request
from tests.mcp_endpoint.test_notifications import sse_json

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("content_store")]

NAMES = [f"client-{i}" for i in range(1, 60)]
INSIDE = next(name for name in NAMES if gets_candidate(name, "style", 50))
OUTSIDE = next(name for name in NAMES if not gets_candidate(name, "style", 50))


@pytest.fixture(autouse=True)
def tokens_required(settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False, "KEEPALIVE_SECONDS": 30, "CHANGE_POLL_SECONDS": 0.1}
    forget_cached_tokens()
    yield
    forget_cached_tokens()


@database_sync_to_async
def setup() -> dict[str, str]:
    style = make_snippet("style", text="Be brief.")
    release(style, labels=("staging",))
    Snippet.objects.filter(pk=style.pk).update(text="Be warm.")
    release(Snippet.objects.get(pk=style.pk), labels=())
    release(make_prompt("reply", messages=[{"role": "user", "kind": "text", "text": "{{> style }} {{ topic }}"}]),
            labels=("staging",))
    release(make_resource("docs://guide", text="Guide. {{> style }}"), labels=("staging",))
    return {name: f"Bearer {create_client(name=name, label='staging')[1]}" for name in (INSIDE, OUTSIDE)}


@database_sync_to_async
def roll_out(publisher) -> None:
    set_rollout(Snippet.objects.get(name="style"), label="staging", version_number=2, percent=50,
                acting_user=publisher)


async def listen(authorization: str) -> ApplicationCommunicator:
    headers, body = modern_request("subscriptions/listen", {"notifications": {
        "promptsListChanged": True, "resourceSubscriptions": ["docs://guide"]}})
    headers["authorization"] = authorization
    comm = ApplicationCommunicator(McpHttpApp(), asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    assert (await comm.receive_output(3))["status"] == 200
    assert "acknowledged" in (await comm.receive_output(3))["body"].decode()
    return comm


async def heard(comm: ApplicationCommunicator, seconds: float) -> set[str]:
    found: set[str] = set()
    deadline = asyncio.get_running_loop().time() + seconds
    while (left := deadline - asyncio.get_running_loop().time()) > 0:
        if await comm.receive_nothing(min(left, 0.1)):  # waits without ending the stream on a timeout
            continue
        chunk = await comm.receive_output(1)
        found |= {message.get("method") for message in sse_json(chunk.get("body", b""))}
    return found


async def read(authorization: str, method: str, params: dict) -> dict:
    headers, body = modern_request(method, params)
    headers["authorization"] = authorization
    return (await call_asgi(McpHttpApp(), "POST", headers, body)).json()["result"]


async def test_only_the_client_in_the_snippets_bucket_hears_and_reads_the_candidate(publisher):
    tokens = await setup()
    inside, outside = await listen(tokens[INSIDE]), await listen(tokens[OUTSIDE])
    await roll_out(publisher)
    assert await heard(inside, 2.0) == {PROMPTS_CHANGED, RESOURCE_UPDATED}
    assert await heard(outside, 0.5) == set()
    for name, style in ((INSIDE, "Be warm."), (OUTSIDE, "Be brief.")):
        got = await read(tokens[name], "prompts/get", {"name": "reply", "arguments": {"topic": "owls"}})
        assert got["messages"][0]["content"]["text"] == f"{style} owls"
        guide = await read(tokens[name], "resources/read", {"uri": "docs://guide"})
        assert guide["contents"][0]["text"] == f"Guide. {style}"
        assert guide["cacheScope"] == "private"  # answered per client while the rollout runs
    for comm in (inside, outside):
        await comm.send_input({"type": "http.disconnect"})
        await comm.wait(2)
