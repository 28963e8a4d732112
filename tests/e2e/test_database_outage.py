"""PostgreSQL down for longer than a keep-alive, under a real daphne worker.

The test starts its own PostgreSQL cluster (initdb/pg_ctl on a free port) and stops it while a
legacy GET stream and a token-bound subscriptions/listen stream are open. Streams must stay
alive (keep-alive comments keep coming; the re-check is retried), requests that need the
database get a JSON-RPC error with HTTP 503 on both wire generations, and the REST API answers
JSON with 503 and `code: database_unavailable` (not Django's HTML 500, and never no reply);
once the database is back a publish reaches both streams and the worker serves new sessions.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from .servers import (
    LEGACY,
    WATCHED,
    Server,
    amanage,
    base_env,
    changed_fixture,
    legacy_call,
    legacy_initialize,
    logs_on_failure,
    manage,
    modern_body,
    modern_headers,
    open_get_stream,
    open_listen,
    prepare_database,
    request,
    wait_updated,
)

pytestmark = [pytest.mark.e2e]

KEEPALIVE = 1.0
OUTAGE = 6.0  # seconds the database stays down: several keep-alives, past every cache window


async def _keepalives_within(stream, seconds: float) -> int:
    """How many keep-alive comments arrive in ``seconds`` (0 if the stream ended or went quiet)."""
    deadline = time.monotonic() + seconds
    seen = 0
    while (left := deadline - time.monotonic()) > 0:
        try:
            chunk = await stream.raw(left)
        except TimeoutError:
            break
        if chunk == b"":
            break
        seen += chunk.count(b": keep-alive")
    return seen


async def test_streams_and_the_worker_survive_a_database_outage(private_postgres, tmp_path):
    env = base_env(private_postgres.create_database("outage"))
    env["MCP_KEEPALIVE_SECONDS"] = str(KEEPALIVE)
    prepare_database(env)
    token = manage(env, "shell", "-c", "from registry.serving.clients import create_client; "
                   "print(create_client(name='outage-client')[1])").stdout.strip().splitlines()[-1]
    api_token = manage(env, "shell", "-c", "from django.contrib.auth.models import User; "
                       "from rest_framework.authtoken.models import Token; "
                       "u = User.objects.create_superuser('ci', 'ci@example.com', 'not-used-pw-1'); "
                       "print(Token.objects.create(user=u).key)").stdout.strip().splitlines()[-1]
    with Server("daphne", env, tmp_path) as server:
        port = server.port
        with logs_on_failure(server):
            sid = await legacy_initialize(port)
            assert await legacy_call(port, sid, "resources/subscribe", {"uri": WATCHED}) == {}
            legacy = await open_get_stream(port, sid)
            listen, _ack = await open_listen(port, [WATCHED], rid=21, token=token)
            try:
                private_postgres.stop()
                down_at = time.monotonic()
                await asyncio.sleep(OUTAGE)  # past the session and token caches: re-checks hit the outage
                beats = await asyncio.gather(_keepalives_within(legacy, 3 * KEEPALIVE),
                                             _keepalives_within(listen, 3 * KEEPALIVE))
                assert all(n >= 2 for n in beats), f"streams went silent during the outage: {beats} keep-alives"

                # A request that needs the database: a JSON-RPC error with 503, twice (still answering).
                for attempt in range(2):
                    status, headers, body = await request(
                        port, "POST", headers={"Mcp-Session-Id": "ab" * 16, "MCP-Protocol-Version": LEGACY},
                        json_body={"jsonrpc": "2.0", "id": 5, "method": "ping"})
                    assert status == 503, (attempt, status, body[:300])
                    assert headers["content-type"].startswith("application/json"), headers
                    reply = json.loads(body)
                    assert reply["id"] == 5 and reply["error"]["code"] == -32603, reply
                # The same at 2026-07-28 (the token cannot be looked up), with its JSON-RPC body.
                status, headers, body = await request(
                    port, "POST", headers={**modern_headers("prompts/list"), "Authorization": f"Bearer {token}"},
                    json_body=modern_body("prompts/list", rid=6))
                assert status == 503 and json.loads(body)["error"]["code"] == -32603, (status, body[:300])
                # The REST API: JSON with a code, for a read and for a write.
                for method, path, payload in (("GET", "/api/v1/prompts/", None),
                                              ("POST", "/api/v1/import/?publish=true&note=outage", {})):
                    status, headers, body = await request(port, method, path, json_body=payload,
                                                          headers={"Authorization": f"Token {api_token}"})
                    assert status == 503, (method, path, status, body[:300])
                    assert headers["content-type"].startswith("application/json"), headers
                    assert json.loads(body)["code"] == "database_unavailable", body

                private_postgres.start()
                back_at = time.monotonic()
                published = changed_fixture(tmp_path, "Published after the outage")
                receiving = asyncio.gather(wait_updated(legacy, WATCHED, 30), wait_updated(listen, WATCHED, 30))
                await amanage(env, "registry_import", str(published), "--publish", "--note", "after outage")
                await asyncio.wait_for(receiving, 30)
                print(f"outage {back_at - down_at:.1f} s; both streams notified "
                      f"{time.monotonic() - back_at:.1f} s after the database came back")
                fresh = await legacy_initialize(port)  # the worker still serves new sessions
                read = await legacy_call(port, fresh, "resources/read", {"uri": WATCHED}, rid=9)
                assert read["contents"][0]["text"] == "Published after the outage"
            finally:
                legacy.close()
                listen.close()
