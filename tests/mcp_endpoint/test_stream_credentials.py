"""Streams and the credentials they were opened with: an expired token's listen stream ends
like a disconnect (no final result), so the client refreshes and listens again; a revocation
(client, token, user, connection, label, re-issued token) ends the streams that depend on it
within a second, not at the next keep-alive tick or the token's expiry; others stay open."""

from __future__ import annotations

import asyncio
import json
import time
from datetime import timedelta

import pytest
from asgiref.sync import sync_to_async
from channels.testing import ApplicationCommunicator
from django.utils import timezone

from mcp_endpoint.models import CredentialChange
from mcp_endpoint.notify import revocation
from mcp_endpoint.transport.consumers import McpHttpApp
from oauth import bearer
from registry.serving.clients import create_client, forget_cached_tokens, issue_token
from tests.factories import make_user
from tests.oauth.conftest import make_token

from .conftest import asgi_scope, legacy_headers, modern_request, rpc

pytestmark = pytest.mark.django_db(transaction=True)

SECOND = 1.0  # the promise: a revocation ends the streams that depend on it within a second


@pytest.fixture(autouse=True)
def tokens_required(settings, registry_data):
    # Keep-alive ticks far away: only the revocation itself may end a stream in these tests.
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False, "KEEPALIVE_SECONDS": 30, "CHANGE_POLL_SECONDS": 0.1}
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "testserver"]
    forget_cached_tokens()
    bearer.forget_cached()
    yield
    forget_cached_tokens()
    bearer.forget_cached()


class OpenStream:
    def __init__(self, comm: ApplicationCommunicator) -> None:
        self.comm = comm
        self.bodies: list[bytes] = []

    async def next_body(self, timeout: float) -> dict:
        message = await self.comm.receive_output(timeout)
        self.bodies.append(message.get("body", b""))
        return message

    async def ended_within(self, seconds: float) -> float:
        """Seconds until the server ended the stream (AssertionError if it did not in time)."""
        started = time.monotonic()
        while True:
            left = seconds - (time.monotonic() - started)
            if left <= 0:
                raise AssertionError(f"the stream is still open after {seconds} s")
            try:
                message = await self.next_body(left)
            except TimeoutError:
                raise AssertionError(f"the stream is still open after {seconds} s") from None
            if not message.get("more_body", True):
                await self.comm.wait(2)
                return time.monotonic() - started

    def results(self) -> list[dict]:
        """JSON-RPC results the stream carried (a listen's final result would be one)."""
        out = []
        for block in b"".join(self.bodies).decode().split("\n\n"):
            for line in block.split("\n"):
                if line.startswith("data:") and line[5:].strip():
                    message = json.loads(line[5:])
                    if "result" in message or "error" in message:
                        out.append(message)
        return out

    async def still_open(self, seconds: float = 0.3) -> bool:
        return await self.comm.receive_nothing(seconds)

    async def close(self) -> None:
        await self.comm.send_input({"type": "http.disconnect"})
        await self.comm.wait(2)


async def open_listen(authorization: str, rid: int = 9) -> OpenStream:
    headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}}, rid=rid)
    headers["authorization"] = authorization
    comm = ApplicationCommunicator(McpHttpApp(), asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    stream = OpenStream(comm)
    start = await comm.receive_output(3)
    assert start["status"] == 200, start
    ack = await stream.next_body(3)
    assert b"notifications/subscriptions/acknowledged" in ack["body"]
    return stream


async def open_get_stream(authorization: str) -> OpenStream:
    from mcp_endpoint.wire.sessions import store

    headers = legacy_headers()
    headers["authorization"] = authorization
    comm = ApplicationCommunicator(McpHttpApp(), asgi_scope("POST", headers))
    await comm.send_input({"type": "http.request", "more_body": False, "body": rpc("initialize", {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}})})
    start = await comm.receive_output(3)
    sid = dict(start["headers"])[b"mcp-session-id"].decode()
    await comm.receive_output(3)
    await comm.wait(2)
    assert await store.get(sid) is not None
    get_headers = legacy_headers(sid)
    get_headers["authorization"] = authorization
    get_headers["accept"] = "text/event-stream"
    comm = ApplicationCommunicator(McpHttpApp(), asgi_scope("GET", get_headers))
    await comm.send_input({"type": "http.request", "body": b"", "more_body": False})
    assert (await comm.receive_output(3))["status"] == 200
    stream = OpenStream(comm)
    await stream.next_body(3)  # the priming event
    return stream


def _oauth_token(**kwargs) -> tuple[str, object]:
    user = make_user("Editors")
    return make_token(user, **kwargs), user


# ------------------------------------------------------------------------------ expiry


async def test_an_expired_oauth_token_ends_its_listen_stream_without_a_final_result(settings):
    """Both official SDKs take a listen result as the end for good and never listen again; an
    expiry must read as a disconnect, so the client refreshes its token and listens again."""
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "KEEPALIVE_SECONDS": 0.2}
    raw, _user = await sync_to_async(_oauth_token)()
    from oauth2_provider.models import AccessToken

    await sync_to_async(lambda: AccessToken.objects.update(expires=timezone.now() + timedelta(seconds=0.6)))()
    bearer.forget_cached()
    stream = await open_listen(f"Bearer {raw}")
    await stream.ended_within(3)
    assert stream.results() == []  # ended like a disconnect
    assert stream.bodies[-1] == b""


# ------------------------------------------------------------------------------ revocation


async def test_revoking_a_client_ends_its_listen_and_get_streams_within_a_second_and_spares_others():
    client, raw = await sync_to_async(create_client)(name="desk")
    _other, other_raw = await sync_to_async(create_client)(name="laptop")
    listen = await open_listen(f"Bearer {raw}")
    legacy = await open_get_stream(f"Bearer {raw}")
    bystander = await open_listen(f"Bearer {other_raw}")
    client.active = False
    await sync_to_async(client.save)()
    took = await asyncio.gather(listen.ended_within(SECOND), legacy.ended_within(SECOND))
    assert listen.results() == [] and legacy.results() == []
    assert await bystander.still_open()
    await bystander.close()
    print(f"revoked client's streams ended after {max(took):.3f} s")


@pytest.mark.parametrize("change", ["token deleted", "user deactivated", "connection deleted", "expiry shortened"])
async def test_an_oauth_revocation_ends_the_streams_of_that_token_within_a_second(change):
    from oauth2_provider.models import AccessToken

    from oauth.models import OAuthConnection

    raw, user = await sync_to_async(_oauth_token)()
    stream = await open_listen(f"Bearer {raw}")
    other_raw, _other = await sync_to_async(_oauth_token)()
    bystander = await open_listen(f"Bearer {other_raw}")

    def revoke() -> None:
        token = AccessToken.objects.get(user=user)
        if change == "token deleted":
            token.delete()  # what /oauth/revoke_token/ and the admin do
        elif change == "user deactivated":
            user.is_active = False
            user.save()
        elif change == "connection deleted":
            OAuthConnection.objects.get(user=user).delete()
        else:
            token.expires = timezone.now() - timedelta(seconds=1)
            token.save()

    await sync_to_async(revoke)()
    await stream.ended_within(SECOND)
    assert stream.results() == []
    assert await bystander.still_open()
    await bystander.close()


@pytest.mark.parametrize("change", ["label", "scope", "new token", "name"])
async def test_a_client_given_another_label_scope_token_or_name_has_its_streams_end_to_reopen_as_it_is_now(change):
    """The stream judged changes for the label and tags it was opened with, and drew its rollout
    buckets by the name; the client's new ones must take effect, so the stream ends (no result)
    and the client reconnects. (A rename used to leave the stream on the old name's buckets.)"""
    client, raw = await sync_to_async(create_client)(name="desk")
    stream = await open_listen(f"Bearer {raw}")
    if change == "new token":
        await sync_to_async(issue_token)(client)
    else:
        field = {"label": "label", "scope": "scope_tags", "name": "name"}[change]
        setattr(client, field, {"label": "staging", "scope": "ops", "name": "front-desk"}[change])
        await sync_to_async(client.save)()
    await stream.ended_within(SECOND)
    assert stream.results() == []


async def test_a_save_that_changes_nothing_the_client_is_served_keeps_its_streams():
    client, raw = await sync_to_async(create_client)(name="desk")
    stream = await open_listen(f"Bearer {raw}")
    client.description = "the front desk assistant"
    await sync_to_async(client.save)()
    assert await stream.still_open(0.5)
    await stream.close()


async def test_a_revocation_committed_by_another_process_reaches_this_ones_streams_through_the_database(
        monkeypatch):
    """As if another process committed it (Redis up or down): this process acts on nothing after
    commit; the row the change wrote is read by its poller, which wakes the affected streams."""
    client, raw = await sync_to_async(create_client)(name="desk")
    stream = await open_listen(f"Bearer {raw}")
    monkeypatch.setattr(revocation.revocations, "committed", lambda *args: None)
    client.active = False
    await sync_to_async(client.save)()
    assert await sync_to_async(CredentialChange.objects.filter(client_ids=[client.pk]).exists)()
    await stream.ended_within(SECOND)
    assert stream.results() == []


async def test_old_credential_changes_are_pruned():
    await sync_to_async(CredentialChange.objects.create)(client_ids=[1])
    old = await sync_to_async(CredentialChange.objects.create)(client_ids=[2])
    await sync_to_async(CredentialChange.objects.filter(pk=old.pk).update)(
        created=timezone.now() - timedelta(seconds=revocation.PRUNE_SECONDS + 1))
    assert await sync_to_async(revocation.prune)() == 1
    assert await sync_to_async(lambda: list(CredentialChange.objects.values_list("client_ids", flat=True)))() == [[1]]
