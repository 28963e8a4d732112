"""How the official SDKs see a 2026-07-28 listen stream end when its OAuth access token expires.

Both SDKs read a listen result as the server ending the subscription for good: the Python SDK
2.3 then ends the iteration quietly, the TypeScript SDK 2.4 resolves ``subscription.closed``
with "graceful", and neither listens again. An expiry must read as a lost stream instead
(Python: ``SubscriptionLost``; TypeScript: "remote"), which is what tells an application to
refresh its token and listen again. The Python client below does exactly that with a second
token and hears a publish; the TypeScript one reports the cause it was given.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from .servers import ROOT, WATCHED, Server, base_env, changed_fixture, logs_on_failure, manage, prepare_database

pytestmark = pytest.mark.e2e

EXPIRES_IN = 8  # seconds the first token lives once issued
KEEPALIVE = 1.0

PYTHON_CLIENT = r'''
import asyncio, json, subprocess, sys
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.client.subscriptions import SubscriptionLost

URL, WATCHED, FIRST, SECOND, PUBLISH = sys.argv[1:6]


async def listen_once(token: str, *, publish: bool) -> str:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(URL, http_client=http), mode="2026-07-28", cache=None,
                          read_timeout_seconds=20) as client:
            async with client.listen(resource_subscriptions=[WATCHED]) as subscription:
                if publish:
                    subprocess.Popen(PUBLISH, shell=True)
                try:
                    async for event in subscription:
                        return "updated " + str(getattr(event, "uri", ""))
                except SubscriptionLost:
                    return "lost"
                return "graceful end"


async def main() -> None:
    first = await listen_once(FIRST, publish=False)  # until the token expires
    print(json.dumps({"first": first}), flush=True)
    if first == "lost":  # what an application does: refresh the token, listen again
        print(json.dumps({"second": await listen_once(SECOND, publish=True)}), flush=True)


asyncio.run(asyncio.wait_for(main(), 60))
'''

TS_CLIENT = r'''
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
const [url, watched, token] = process.argv.slice(2);
const client = new Client({ name: "expiry-probe", version: "1" },
  { capabilities: {}, versionNegotiation: { mode: { pin: "2026-07-28" } } });
await client.connect(new StreamableHTTPClientTransport(new URL(url),
  { requestInit: { headers: { Authorization: `Bearer ${token}` } } }));
const subscription = await client.listen({ resourceSubscriptions: [watched] });
const cause = await Promise.race([subscription.closed, new Promise((r) => setTimeout(() => r("still open"), 30000))]);
console.log(JSON.stringify({ cause }));
process.exit(0);
'''


def _tokens(env: dict[str, str], resource: str) -> tuple[str, str]:
    """An OAuth access token that expires in EXPIRES_IN s and a fresh one, for one staff user."""
    code = textwrap.dedent(f"""
        import secrets
        from datetime import timedelta
        from django.contrib.auth.models import User
        from django.utils import timezone
        from oauth2_provider.models import AccessToken, Application, set_token_value
        user = User.objects.create_user("ada", "ada@example.com", "not-used-pw-1", is_staff=True)
        app = Application.objects.create(name="expiry", client_type="public",
                                         authorization_grant_type="authorization-code", redirect_uris="http://127.0.0.1/cb")
        def token(seconds):
            raw = secrets.token_urlsafe(30)
            access = AccessToken(user=user, application=app, scope="mcp", resource=[{resource!r}],
                                 expires=timezone.now() + timedelta(seconds=seconds))
            set_token_value(access, raw)
            access.save()
            return raw
        print(token({EXPIRES_IN}), token(3600))
    """)
    first, second = manage(env, "shell", "-c", code).stdout.split()[-2:]
    return first, second


@pytest.fixture
def server(tmp_path):
    env = base_env(f"sqlite:///{tmp_path / 'expiry.sqlite3'}")
    env["MCP_KEEPALIVE_SECONDS"] = str(KEEPALIVE)
    prepare_database(env)
    srv = Server("daphne", env, tmp_path)
    srv.url = f"http://127.0.0.1:{srv.port}/mcp"
    with srv, logs_on_failure(srv):
        yield srv


def test_the_python_sdk_sees_an_expired_tokens_listen_as_lost_and_listens_again_with_a_fresh_token(server,
                                                                                                  tmp_path):
    first, second = _tokens(server.env, server.url)
    publish = (f"cd {ROOT} && {sys.executable} manage.py registry_import "
               f"{changed_fixture(tmp_path, 'After the refresh')} --publish --note refreshed")
    done = subprocess.run([sys.executable, "-c", PYTHON_CLIENT, server.url, WATCHED, first, second, publish],
                          cwd=ROOT, env=server.env, capture_output=True, text=True, timeout=90)
    lines = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert lines[:1] == [{"first": "lost"}], (done.stdout, done.stderr[-2000:])
    assert lines[1:] == [{"second": f"updated {WATCHED}"}], (done.stdout, done.stderr[-2000:])


def test_the_typescript_sdk_sees_an_expired_tokens_listen_closed_as_remote_not_graceful(server):
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("Node.js and npm are needed to install the TypeScript SDK 2.4 client")
    from .test_sdk_reconnect import _matrix

    matrix = _matrix("matrix_clients")
    client = next(c for c in matrix.CLIENTS if c.slug == "ts-sdk-2.4")
    try:
        matrix.install(client)
    except Exception as exc:
        pytest.skip(f"could not install {client.packages}: {exc}")
    folder = _matrix("matrix_paths").CACHE / client.slug
    (folder / "expiry_probe.mjs").write_text(TS_CLIENT)
    first, _second = _tokens(server.env, server.url)
    done = subprocess.run(["node", "expiry_probe.mjs", server.url, WATCHED, first], cwd=folder,
                          capture_output=True, text=True, timeout=60)
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"cause": "remote"}, (done.stdout, done.stderr[-1500:])
