"""Change notifications end to end at the ASGI level: a committed publish reaches open streams."""

from __future__ import annotations

import asyncio
import json

from channels.db import database_sync_to_async
from channels.testing import ApplicationCommunicator

from mcp_endpoint.transport.consumers import McpHttpApp
from registry.models import Prompt, Resource
from registry.release import services
from tests.mcp_endpoint.conftest import asgi_scope, call_asgi, legacy_headers, modern_request, rpc

INIT = rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                          "clientInfo": {"name": "t", "version": "1"}})


def sse_json(body: bytes) -> list[dict]:
    out = []
    for block in body.replace(b"\r\n", b"\n").split(b"\n\n"):
        data = b"\n".join(line[5:].lstrip() for line in block.split(b"\n") if line.startswith(b"data:"))
        if data:
            out.append(json.loads(data))
    return out


async def next_message(comm: ApplicationCommunicator, timeout: float = 3.0) -> dict:
    while True:
        chunk = await comm.receive_output(timeout)
        messages = sse_json(chunk.get("body", b""))
        if messages:
            return messages[0]


@database_sync_to_async
def edit_and_publish_resource(uri: str, text: str) -> None:
    resource = Resource.objects.get(uri=uri)
    resource.text = text
    resource.save()
    services.publish(resource, acting_user=None, note="edited")


@database_sync_to_async
def edit_prompt_draft(name: str) -> None:
    prompt = Prompt.objects.get(name=name)
    prompt.description = "Only the draft changed"
    prompt.save()


async def open_listen(app, notifications: dict, rid: int = 7) -> ApplicationCommunicator:
    headers, body = modern_request("subscriptions/listen", {"notifications": notifications}, rid=rid)
    comm = ApplicationCommunicator(app, asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    assert (await comm.receive_output(3))["status"] == 200
    ack = await next_message(comm)
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    return comm


async def test_listen_stream_receives_update_for_a_subscribed_uri_after_publish(registry_data, anonymous_allowed):
    app = McpHttpApp()
    comm = await open_listen(app, {"resourceSubscriptions": ["test://static-text"], "resourcesListChanged": True})
    await edit_and_publish_resource("test://static-text", "Fresh content")
    note = await next_message(comm)
    assert note == {"jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {
        "uri": "test://static-text", "_meta": {"io.modelcontextprotocol/subscriptionId": 7}}}
    headers, body = modern_request("resources/read", {"uri": "test://static-text"})
    reread = await call_asgi(app, "POST", headers, body)
    assert reread.json()["result"]["contents"][0]["text"] == "Fresh content"
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)


async def test_listen_stream_hears_nothing_it_did_not_ask_for(registry_data, anonymous_allowed):
    from mcp_endpoint.notify.hub import hub

    app = McpHttpApp()
    comm = await open_listen(app, {"promptsListChanged": True})
    await edit_and_publish_resource("test://static-text", "Fresh content")
    await asyncio.sleep(0.3)
    assert hub.delivered == 0
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)
    assert not hub.listeners  # the disconnect unregistered the stream


async def test_draft_only_change_announces_nothing(registry_data, anonymous_allowed):
    from mcp_endpoint.notify.hub import hub

    app = McpHttpApp()
    comm = await open_listen(app, {"promptsListChanged": True, "resourcesListChanged": True})
    await edit_prompt_draft("test_simple_prompt")
    await asyncio.sleep(0.3)
    assert hub.delivered == 0
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)


async def test_legacy_get_stream_gets_updates_for_subscribed_uris(registry_data, anonymous_allowed):
    app = McpHttpApp()
    init = await call_asgi(app, "POST", legacy_headers(version=None), INIT)
    sid = init.headers["mcp-session-id"]
    subscribed = await call_asgi(app, "POST", legacy_headers(sid),
                                 rpc("resources/subscribe", {"uri": "test://watched-resource"}, rid=2))
    assert subscribed.json()["result"] == {}
    comm = ApplicationCommunicator(app, asgi_scope("GET", dict(legacy_headers(sid), accept="text/event-stream")))
    await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
    assert (await comm.receive_output(3))["status"] == 200
    await asyncio.sleep(0.1)
    await edit_and_publish_resource("test://static-text", "not subscribed")
    await edit_and_publish_resource("test://watched-resource", "Watched v2")
    note = await next_message(comm)
    assert note == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                    "params": {"uri": "test://watched-resource"}}
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)


async def test_catch_up_delivers_a_change_committed_by_another_process(registry_data, settings):
    """A change the hub never heard of directly (another process, no channel layer) still arrives."""
    from mcp_endpoint.notify import handoff

    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "CHANGE_POLL_SECONDS": 0.1}
    app = McpHttpApp()
    comm = await open_listen(app, {"resourceSubscriptions": ["test://static-text"]})
    from registry.signals import registry_changed

    registry_changed.disconnect(dispatch_uid="mcp_endpoint.forward_registry_changes")
    try:
        await edit_and_publish_resource("test://static-text", "From elsewhere")
    finally:
        registry_changed.connect(handoff.forward_registry_changes,
                                 dispatch_uid="mcp_endpoint.forward_registry_changes")
    note = await next_message(comm)
    assert note["params"]["uri"] == "test://static-text"
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)


async def test_a_process_without_streams_still_serves_changes_committed_elsewhere(registry_data, settings,
                                                                                 monkeypatch):
    """The request path starts the catch-up, so a worker nobody listens on never serves stale content."""
    from mcp_endpoint.notify import hub as hub_module
    from registry.changes import ChangeBatch

    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "CHANGE_POLL_SECONDS": 0.1}
    app = McpHttpApp()
    headers, body = modern_request("resources/read", {"uri": "test://static-text"})
    first = await call_asgi(app, "POST", headers, body)
    assert first.json()["result"]["contents"][0]["text"].startswith("This is the content")
    # The read answered from its one entry and started the catalog's build: let it end first, as the
    # test database (SQLite's shared in-memory cache) locks a table a reader holds, where a file in
    # WAL mode lets the writer through.
    from registry.serving import warmup

    warmup.join()
    with monkeypatch.context() as patch:  # committed "by another process": no announcement here at all
        patch.setattr(ChangeBatch, "__call__", lambda self: None)
        await edit_and_publish_resource("test://static-text", "Changed elsewhere")
    for _ in range(50):
        await asyncio.sleep(0.05)
        again = await call_asgi(app, "POST", headers, body)
        if again.json()["result"]["contents"][0]["text"] == "Changed elsewhere":
            break
    assert again.json()["result"]["contents"][0]["text"] == "Changed elsewhere"
    await hub_module.hub.stop()


async def test_a_listen_refused_for_its_accept_header_holds_no_stream_slot(registry_data, anonymous_allowed):
    from mcp_endpoint.notify.hub import hub

    app = McpHttpApp()
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}})
    headers["accept"] = "application/json"
    for _ in range(3):
        assert (await call_asgi(app, "POST", headers, body)).status == 406
    assert not hub.listeners


async def test_revoking_a_client_ends_its_open_listen_stream(registry_data, settings):
    from registry.serving.clients import create_client, forget_cached_tokens

    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False, "KEEPALIVE_SECONDS": 0.05}
    settings.ALLOWED_HOSTS = ["127.0.0.1"]
    client, token = await database_sync_to_async(create_client)(name="desk")
    app = McpHttpApp()
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}})
    headers["authorization"] = f"Bearer {token}"
    comm = ApplicationCommunicator(app, asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    assert (await comm.receive_output(3))["status"] == 200
    assert (await next_message(comm))["method"] == "notifications/subscriptions/acknowledged"
    client.active = False  # revoked by a save: a bulk update of `active` is refused (it would go unrecorded)
    await database_sync_to_async(client.save)()
    forget_cached_tokens()
    for _ in range(100):
        chunk = await comm.receive_output(3)
        if not chunk.get("more_body", True):
            break
    assert chunk.get("more_body") is False
    await comm.wait(2)
