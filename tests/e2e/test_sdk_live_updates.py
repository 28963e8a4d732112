"""Live updates seen through the official Python SDK client, against a real daphne server.

Three ways the registry changes, each watched by an SDK client at both wire generations:

* a publish through the REST API: ``registry://changes/recent`` is updated, its subscribers are
  told, and a re-read lists the publish;
* an edit of a file under ``registry_import --watch`` (a separate process): the subscribed
  resource is updated within the issue's 5 s and a re-read serves the new text;
* ``label.save()`` in a separate ``manage.py shell -c`` process: the listener hears
  ``prompts/list_changed``, ``prompts/get`` serves the version the label now points at, and the
  move is audited with actor ``database``.

Generations:

* 2025-11-25: ``mcp.client.streamable_http.streamable_http_client`` + ``ClientSession``:
  ``initialize``, ``resources/subscribe``, notifications on the session's GET stream.
* 2026-07-28: the installed SDK (``mcp`` 2.3.0, pinned in pyproject.toml) speaks
  ``subscriptions/listen`` (``mcp.client.subscriptions``, ``Client.listen()``), so it is used
  directly; no second SDK is needed.

Notifications are asserted as the SDK's ``message_handler`` receives them (the listen driver
passes every event there too). Every wait is bounded; the watch-to-notification times are
printed (``pytest -s``), not asserted beyond the 5 s bound the issue names.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.e2e.servers import (
    FIXTURE,
    LEGACY,
    MODERN,
    ROOT,
    Server,
    amanage,
    base_env,
    logs_on_failure,
    manage,
    prepare_database,
)

pytestmark = pytest.mark.e2e

RECENT = "registry://changes/recent"
GUIDE = "docs://guide"
SIMPLE = "test_simple_prompt"
FIRST_TEXT = "This is a simple prompt for testing."
SECOND_TEXT = "Second version of the simple prompt."
PUBLISHED_PROMPT = "test_prompt_with_image"
WATCH_BOUND = 5.0  # seconds from saving a watched file to the client's notification (the bound)
WAIT = 10.0  # any other notification
UPDATED = "notifications/resources/updated"
PROMPTS_CHANGED = "notifications/prompts/list_changed"

# Moves production of the simple prompt to the other of its two versions, as a person would in
# the shell: straight on the model, no service. Prints "from to".
TOGGLE_LABEL = (
    "from registry.models import PromptLabel\n"
    f"label = PromptLabel.objects.get(entry__name='{SIMPLE}', name='production')\n"
    "old = label.version.number\n"
    "label.version = label.entry.versions.get(number=3 - old)\n"
    "label.save()\n"
    "print(old, label.version.number)\n"
)


def audited(old: int, new: int) -> str:
    return ("from registry.models import AuditEntry\n"
            f"print(AuditEntry.objects.filter(actor_name='database', action__in=['rollback', 'label_move'], "
            f"entry_key='{SIMPLE}', label='production', from_version={old}, to_version={new}).count())\n")


# ----------------------------------------------------------------------------- the server

@dataclass
class Registry:
    env: dict[str, str]
    server: Server
    base: str
    guide: Path
    api_token: str


def wait_for_line(path: Path, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in {path.name}: {path.read_text(errors='replace')}")
        time.sleep(0.05)


@pytest.fixture(scope="module")
def registry(tmp_path_factory) -> Any:
    """One server with the conformance fixture (the simple prompt at v2, production on v2), a
    publisher's REST token, and a watcher keeping docs://guide in step with a folder."""
    folder = tmp_path_factory.mktemp("sdk-live-updates")
    env = base_env(f"sqlite:///{folder}/live.sqlite3")
    prepare_database(env)
    source = FIXTURE.read_text(encoding="utf-8")
    assert source.count(FIRST_TEXT) == 1, "the fixture's simple prompt changed; update the test"
    second = folder / "second.yaml"
    second.write_text(source.replace(FIRST_TEXT, SECOND_TEXT), encoding="utf-8")
    manage(env, "registry_import", str(second), "--publish", "--note", "v2")
    token = manage(env, "shell", "-v", "0", "-c",
                   "from django.contrib.auth.models import User\n"
                   "from rest_framework.authtoken.models import Token\n"
                   "u = User.objects.create_superuser('release', 'r@example.com', 'not-used-pw-1')\n"
                   "print(Token.objects.create(user=u).key)").stdout.split()[-1]
    watched = folder / "watched"
    (watched / "docs").mkdir(parents=True)
    guide = watched / "docs" / "guide.md"
    guide.write_text("# Guide\nfirst edition\n")
    (watched / "guide.yaml").write_text(f"resources:\n  - uri: {GUIDE}\n    name: guide\n"
                                        "    mime_type: text/markdown\n    file: docs/guide.md\n")
    log_path = folder / "watcher.log"
    with Server("daphne", env, folder) as server, open(log_path, "wb") as log:
        watcher = subprocess.Popen(
            [sys.executable, "manage.py", "registry_import", str(watched), "--watch", "--publish", "--note",
             "synced from disk"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_line(log_path, "initial import: resources: 1 created; published 1")
            with logs_on_failure(server):
                yield Registry(env, server, f"http://127.0.0.1:{server.port}", guide, token)
        finally:
            if watcher.poll() is None:
                os.kill(watcher.pid, signal.SIGINT)
            try:
                watcher.wait(20)
            except subprocess.TimeoutExpired:
                watcher.kill()
                watcher.wait(5)


def api_publish(registry: Registry, note: str) -> None:
    """What CI does: change a prompt's draft and publish it to production (with an override reason:
    the single release user has no second publisher to approve)."""
    def call(method: str, path: str, body: dict[str, Any]) -> None:
        request = urllib.request.Request(f"{registry.base}/api/v1/{path}", method=method,
                                         data=json.dumps(body).encode(),
                                         headers={"Authorization": f"Token {registry.api_token}",
                                                  "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=20) as response:
            assert response.status in (200, 201), response.read()

    call("PATCH", f"prompts/{PUBLISHED_PROMPT}/", {"description": f"An image prompt ({note})."})
    call("POST", f"prompts/{PUBLISHED_PROMPT}/publish/",
         {"note": note, "labels": ["production"], "override_reason": "e2e test of live updates"})


# ----------------------------------------------------------------------------- the SDK clients

class Inbox:
    """What the SDK handed to ``message_handler``: (method, uri) of each server notification."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str]] = []

    async def handler(self, message: Any) -> None:
        if isinstance(message, Exception):
            return
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method:
            uri = getattr(getattr(root, "params", None), "uri", None)
            self.seen.append((method, str(uri) if uri is not None else ""))

    def mark(self) -> int:
        return len(self.seen)

    async def wait_for(self, method: str, uri: str = "", *, since: int, timeout: float) -> None:
        """Until a notification ``method`` (for ``uri``, if given) arrived after ``since``."""
        try:
            with anyio.fail_after(timeout):
                while not any(m == method and (not uri or u == uri) for m, u in self.seen[since:]):
                    await anyio.sleep(0.01)
        except TimeoutError:
            raise AssertionError(f"no {method} {uri} within {timeout} s; got {self.seen[since:]}") from None


@asynccontextmanager
async def legacy_client(url: str, inbox: Inbox, resources: list[str]) -> AsyncIterator[Any]:
    """A 2025-11-25 ``ClientSession`` on the SDK's Streamable HTTP transport, subscribed to
    ``resources``; entered once the session's GET stream is open (the SDK opens it by itself
    after ``notifications/initialized``), so nothing published afterwards can be missed."""
    import warnings

    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    stream_open = anyio.Event()

    async def on_response(response: Any) -> None:
        if response.request.method == "GET" and response.status_code == 200:
            stream_open.set()

    http = create_mcp_http_client()
    http.event_hooks["response"].append(on_response)
    async with http, streamable_http_client(url, http_client=http) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=WAIT, message_handler=inbox.handler) as session:
        result = await session.initialize()
        assert result.protocol_version == LEGACY
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is deprecated for 2026-07-28 only
            for uri in resources:
                await session.subscribe_resource(uri)
        with anyio.fail_after(WAIT):
            await stream_open.wait()
        yield session


@asynccontextmanager
async def modern_client(url: str, inbox: Inbox, resources: list[str]) -> AsyncIterator[Any]:
    """A 2026-07-28 ``Client`` (no handshake, no cache: every read reaches the server) with an
    open ``subscriptions/listen`` for ``resources`` and prompt list changes, acknowledged."""
    from mcp import Client

    client = Client(url, mode=MODERN, cache=None, read_timeout_seconds=WAIT, message_handler=inbox.handler)
    async with client, client.listen(resource_subscriptions=resources, prompts_list_changed=True) as subscription:
        assert list(subscription.honored.resource_subscriptions or []) == resources
        yield client


def connect(generation: str, registry: Registry, inbox: Inbox, resources: list[str] = ()) -> Any:
    opener = legacy_client if generation == LEGACY else modern_client
    return opener(f"{registry.base}/mcp", inbox, list(resources))


def text_of(result: Any, index: int = 0) -> str:
    return result.contents[index].text


GENERATIONS = [LEGACY, MODERN]


# ----------------------------------------------------------------------------- the tests

@pytest.mark.parametrize("generation", GENERATIONS)
async def test_a_rest_api_publish_updates_changes_recent_and_the_subscribed_sdk_client_is_told(registry,
                                                                                             generation):
    note = f"REST publish for {generation} {uuid.uuid4().hex[:8]}"
    inbox = Inbox()
    async with connect(generation, registry, inbox, [RECENT]) as client:
        before = await client.read_resource(RECENT)
        assert note not in text_of(before)
        mark = inbox.mark()
        await anyio.to_thread.run_sync(api_publish, registry, note)
        await inbox.wait_for(UPDATED, RECENT, since=mark, timeout=WAIT)
        after = await client.read_resource(RECENT)
    assert note in text_of(after)  # the Markdown table
    changes = [c for c in json.loads(text_of(after, 1))["changes"] if c["note"] == note]
    # What the client is served changed: production moved to the new version (no names by default).
    assert [(c["entry"], c["action"], c["label"]) for c in changes] == [(PUBLISHED_PROMPT, "label_move", "production")]
    assert not any("author" in c for c in changes)


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_editing_a_watched_file_reaches_a_subscribed_sdk_client_within_five_seconds(registry,
                                                                                          generation):
    edition = f"# Guide\n{generation} edition {uuid.uuid4().hex[:8]}\n"
    inbox = Inbox()
    async with connect(generation, registry, inbox, [GUIDE]) as client:
        assert text_of(await client.read_resource(GUIDE)) != edition
        mark = inbox.mark()
        saved = time.monotonic()
        registry.guide.write_text(edition)
        await inbox.wait_for(UPDATED, GUIDE, since=mark, timeout=WATCH_BOUND)
        print(f"watch-to-notification ({generation}, SDK client): {time.monotonic() - saved:.2f} s")
        after = await client.read_resource(GUIDE)
    assert text_of(after) == edition


@pytest.mark.parametrize("generation", GENERATIONS)
async def test_a_label_saved_in_a_manage_py_shell_process_reaches_the_sdk_client_and_is_audited(registry,
                                                                                               generation):
    inbox = Inbox()
    async with connect(generation, registry, inbox) as client:
        before = (await client.get_prompt(SIMPLE)).messages[0].content.text
        expected = FIRST_TEXT if before == SECOND_TEXT else SECOND_TEXT
        mark = inbox.mark()
        old, new = map(int, (await amanage(registry.env, "shell", "-c", TOGGLE_LABEL)).split()[-2:])
        await inbox.wait_for(PROMPTS_CHANGED, since=mark, timeout=WAIT)
        after = (await client.get_prompt(SIMPLE)).messages[0].content.text
    assert after == expected
    assert (await amanage(registry.env, "shell", "-c", audited(old, new))).split()[-1] == "1"
