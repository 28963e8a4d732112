"""Every publish reaches every listener while clients loop list requests (one daphne worker).

The regression: a list request after a commit starts a full catalog rebuild, and the hub delivers
a request's change only once that request's response is out (mcp_endpoint/notify/handoff.py). When a
second publish committed, and a rebuild read it, before the first publish's delivery, the hub
took the refreshed catalog as what its listeners had been told, so the second change found
itself "already told" and reached no listener (a review counted 8-12 of 40 publishes lost with
16-24 list readers; fixed in 95001c2, the hub's own `Told` record per label). The loss is
counted under load by bench/lost.py; this test pins it: RESOURCES publishes (each a different
resource every listener subscribes to) started STAGGER s apart, so they overlap as publishes by
several operators do, while READERS clients loop prompts/list, resources/list and
resources/templates/list; every `subscriptions/listen` stream and a legacy GET stream must hear
every publish. On SQLite and, when TEST_POSTGRES_URL is set (e.g.
postgres://postgres@127.0.0.1:5432/test; a database of its own is created there and dropped),
PostgreSQL.

Nothing is timed beyond a generous DEADLINE for the notifications to arrive; the server runs
with LOG_LEVEL=INFO, so a failure shows its "changes [...]: N notifications queued" lines.
On 22b626d (before the fix) it failed 5 runs of 5 in each case (publishes that reached no
listener, of 20: SQLite 16, 18, 4, 17, 2; PostgreSQL 19, 14, 17, 19, 19); with READERS = 0 the
SQLite case passed there (one run): the list traffic is what it catches.
"""

from __future__ import annotations

import asyncio
import json
import os
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from .servers import (
    Server,
    SseStream,
    base_env,
    json_of,
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
)

pytestmark = pytest.mark.e2e

RESOURCES = 20  # publishes, one per resource
LISTEN_STREAMS = 4
READERS = 6
STAGGER = 0.1  # seconds between the starts of two publishes (they overlap)
DEADLINE = 20.0  # seconds after the last publish was answered for every notification to arrive
UPDATED = "notifications/resources/updated"
LISTS = (("prompts/list", "prompts"), ("resources/list", "resources"),
         ("resources/templates/list", "resourceTemplates"))
URIS = [f"test://under-load/{i:02d}" for i in range(RESOURCES)]
QUIET_DAPHNE = ["-m", "daphne", "-v", "0", "-b", "127.0.0.1", "-p", "{port}",  # no access log
                "config.asgi:application"]


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.services)])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path}/under-load.sqlite3"
        return
    admin_url = os.environ.get("TEST_POSTGRES_URL")
    if not admin_url:
        pytest.skip("TEST_POSTGRES_URL not set (e.g. postgres://postgres@127.0.0.1:5432/test; CI sets it)")
    import psycopg

    try:
        admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    except Exception as exc:  # set but unreachable: a broken machine, not a skip
        pytest.fail(f"TEST_POSTGRES_URL={admin_url} is set but PostgreSQL is unreachable: {exc}")
    name = f"mcp_load_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(admin_url)
    try:
        yield urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    finally:
        try:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        finally:
            admin.close()


def document(texts: dict[str, str]) -> str:
    """A prompts-as-code file of the given resources (URI -> text), published to production."""
    entries = [f"  - uri: {uri}\n    name: {uri.rsplit('/', 1)[1]}-under-load\n    mime_type: text/plain\n"
               f"    text: {json.dumps(text)}\n    labels: [production]\n" for uri, text in texts.items()]
    return "resources:\n" + "".join(entries)


async def publish(port: int, token: str, texts: dict[str, str]) -> None:
    status, _headers, body = await request(
        port, "POST", "/api/v1/import/",
        headers={"Authorization": f"Token {token}", "Accept": "application/json"},
        json_body={"document": document(texts), "publish": True, "note": "under load",
                   "override_reason": "e2e: announcements under load"}, timeout=60)
    assert status == 200, body[:2000]
    outcomes = json.loads(body)["outcomes"]
    assert all(o["published"] is not None for o in outcomes), outcomes


async def read_lists(port: int, stop: asyncio.Event, served: list[int], index: int) -> None:
    """One client looping the three list methods until `stop`; every reply must be a list."""
    turn = index
    while not stop.is_set():
        method, field = LISTS[turn % len(LISTS)]
        turn += 1
        status, headers, body = await request(port, "POST", headers=modern_headers(method),
                                              json_body=modern_body(method, rid=turn), timeout=60)
        reply = json_of(status, headers, body)
        assert isinstance(reply.get("result", {}).get(field), list), reply
        served[0] += 1


async def heard(stream: SseStream, got: set[str], stop: asyncio.Event) -> None:
    """Record the URI of every resources/updated the stream carries until all arrived or `stop`."""
    while not stop.is_set() and not got >= set(URIS):
        try:
            message = await stream.next_message(0.5)
        except TimeoutError:
            continue
        if message.get("method") == UPDATED:
            got.add(message["params"]["uri"])


async def test_every_publish_reaches_every_listener_while_clients_loop_list_requests(database_url, tmp_path):
    env = dict(base_env(database_url), LOG_LEVEL="INFO")
    prepare_database(env)
    token = manage(env, "shell", "-c", (
        "from django.contrib.auth import get_user_model\n"
        "from rest_framework.authtoken.models import Token\n"
        "u = get_user_model().objects.create_superuser('e2e-admin', 'e2e@example.com', 'e2e-password-1')\n"
        "print(Token.objects.create(user=u).key)")).stdout.strip().splitlines()[-1]
    server = Server("daphne", env, tmp_path, command=QUIET_DAPHNE)
    with server, logs_on_failure(server):
        port = server.port
        await publish(port, token, dict.fromkeys(URIS, "version 1"))
        streams: dict[str, SseStream] = {}
        readers: list[asyncio.Task[Any]] = []
        stop = asyncio.Event()
        try:
            for rid in range(LISTEN_STREAMS):
                streams[f"listen stream {rid}"], _ack = await open_listen(port, URIS, rid=100 + rid)
            sid = await legacy_initialize(port)
            for rid, uri in enumerate(URIS, start=10):
                assert await legacy_call(port, sid, "resources/subscribe", {"uri": uri}, rid=rid) == {}
            streams["legacy GET stream"] = await open_get_stream(port, sid)
            got: dict[str, set[str]] = {name: set() for name in streams}
            listening = [asyncio.ensure_future(heard(stream, got[name], stop))
                         for name, stream in streams.items()]
            served = [0]
            readers = [asyncio.ensure_future(read_lists(port, stop, served, i)) for i in range(READERS)]
            await asyncio.sleep(0.5)  # the readers under way

            async def one(i: int, uri: str) -> None:
                await asyncio.sleep(i * STAGGER)
                await publish(port, token, {uri: f"version 2 of {uri}"})

            await asyncio.gather(*(one(i, uri) for i, uri in enumerate(URIS)))
            await asyncio.wait(listening, timeout=DEADLINE)
            stop.set()
            await asyncio.gather(*listening)
            await asyncio.gather(*readers)  # a failed list reply fails the test here
            assert served[0] > 0
            missing = {name: sorted(set(URIS) - seen) for name, seen in got.items() if set(URIS) - seen}
            if missing:
                unheard = [uri for uri in URIS if all(uri not in seen for seen in got.values())]
                log = server.log_path.read_text(errors="replace").splitlines()
                deliveries = "\n".join(line for line in log if "notifications queued for" in line)
                pytest.fail(f"{len(unheard)} of {RESOURCES} publishes reached no listener, "
                            f"{sum(map(len, missing.values()))} of {RESOURCES * len(streams)} notifications "
                            f"missing {DEADLINE} s after the last publish "
                            f"({served[0]} list requests served): "
                            f"{missing}\nthe hub's deliveries:\n{deliveries}")
        finally:
            stop.set()
            for task in readers:
                task.cancel()
            for stream in streams.values():
                stream.close()
