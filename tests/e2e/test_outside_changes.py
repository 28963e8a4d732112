"""Changes made outside the services reach running servers: a label moved in `manage.py shell`,
and a side file edited under `registry_import --watch`."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time

import pytest

from .servers import (
    FIXTURE,
    ROOT,
    Server,
    amanage,
    base_env,
    legacy_call,
    legacy_initialize,
    logs_on_failure,
    manage,
    open_get_stream,
    prepare_database,
    wait_updated,
)

pytestmark = pytest.mark.e2e

NOTIFY_BOUND = 5.0  # seconds from the change to the notification
SIMPLE = "test_simple_prompt"
FIRST_TEXT = "This is a simple prompt for testing."
SECOND_TEXT = "Second version of the simple prompt."

MOVE_BACK = (
    "from registry.models import PromptLabel\n"
    f"label = PromptLabel.objects.get(entry__name='{SIMPLE}', name='production')\n"
    "label.version = label.entry.versions.get(number=1)\n"
    "label.save()\n"
)
AUDITED = (
    "from registry.models import AuditEntry\n"
    f"print(AuditEntry.objects.filter(actor_name='database', action='rollback', entry_key='{SIMPLE}',"
    " label='production', from_version=2, to_version=1).count())\n"
)


async def wait_method(stream, method: str, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise AssertionError(f"no {method} within {timeout} s")
        try:
            message = await stream.next_message(left)
        except TimeoutError:
            raise AssertionError(f"no {method} within {timeout} s") from None
        if message.get("method") == method:
            return message


@pytest.fixture
def served(tmp_path):
    env = base_env(f"sqlite:///{tmp_path}/outside.sqlite3")
    prepare_database(env)
    second = tmp_path / "second.yaml"
    source = FIXTURE.read_text(encoding="utf-8")
    assert source.count(FIRST_TEXT) == 1, "the fixture's simple prompt changed; update the test"
    second.write_text(source.replace(FIRST_TEXT, SECOND_TEXT), encoding="utf-8")
    manage(env, "registry_import", str(second), "--publish", "--note", "v2")
    with Server("daphne", env, tmp_path) as server:
        yield env, server, tmp_path


async def test_a_label_moved_in_the_shell_is_announced_served_and_audited(served):
    env, server, _tmp = served
    port = server.port
    with logs_on_failure(server):
        sid = await legacy_initialize(port)
        got = await legacy_call(port, sid, "prompts/get", {"name": SIMPLE})
        assert got["messages"][0]["content"]["text"] == SECOND_TEXT
        stream = await open_get_stream(port, sid)
        try:
            started = time.monotonic()
            await amanage(env, "shell", "-c", MOVE_BACK)
            await wait_method(stream, "notifications/prompts/list_changed", NOTIFY_BOUND)
            print(f"shell label move -> list_changed in {time.monotonic() - started:.2f} s (incl. the shell's start)")
        finally:
            stream.close()
        got = await legacy_call(port, sid, "prompts/get", {"name": SIMPLE}, rid=3)
        assert got["messages"][0]["content"]["text"] == FIRST_TEXT
    assert (await amanage(env, "shell", "-c", AUDITED)).strip().splitlines()[-1] == "1"


def start_watcher(env, folder, log_path):
    log = open(log_path, "wb")  # noqa: SIM115 - closed by the caller through proc.log
    proc = subprocess.Popen([sys.executable, "manage.py", "registry_import", str(folder), "--watch", "--publish",
                             "--note", "synced from disk"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.PIPE)
    proc.log = log  # type: ignore[attr-defined]
    return proc


async def wait_log(path, text: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while text not in path.read_text(errors="replace"):
        if time.monotonic() > deadline:
            raise AssertionError(f"{text!r} not in the watcher's output: {path.read_text(errors='replace')}")
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("stop_with", [signal.SIGINT, signal.SIGTERM])
async def test_editing_a_watched_side_file_notifies_subscribers_within_five_seconds(served, stop_with):
    env, server, tmp = served
    port = server.port
    folder = tmp / "watched"
    (folder / "docs").mkdir(parents=True)
    side = folder / "docs" / "guide.md"
    side.write_text("# Guide\nfirst edition\n")
    (folder / "guide.yaml").write_text(
        "resources:\n  - uri: docs://guide\n    name: guide\n    mime_type: text/markdown\n    file: docs/guide.md\n")
    log_path = tmp / "watcher.log"
    watcher = start_watcher(env, folder, log_path)
    try:
        await wait_log(log_path, "initial import: resources: 1 created; published 1")
        with logs_on_failure(server):
            sid = await legacy_initialize(port)
            assert await legacy_call(port, sid, "resources/subscribe", {"uri": "docs://guide"}) == {}
            stream = await open_get_stream(port, sid)
            try:
                await asyncio.sleep(0.5)
                saved = time.monotonic()
                side.write_text("# Guide\nsecond edition\n")
                await wait_updated(stream, "docs://guide", NOTIFY_BOUND)
                took = time.monotonic() - saved
                print(f"watch-to-notification: {took:.2f} s")
                assert took < NOTIFY_BOUND
            finally:
                stream.close()
            read = await legacy_call(port, sid, "resources/read", {"uri": "docs://guide"}, rid=5)
            assert read["contents"][0]["text"] == "# Guide\nsecond edition\n"
        await wait_log(log_path, "1 file(s) changed (guide.md): resources: 1 updated; published 1")
    finally:
        if watcher.poll() is None:
            os.kill(watcher.pid, stop_with)
        try:
            code = watcher.wait(20)
        finally:
            if watcher.poll() is None:
                watcher.kill()
            watcher.log.close()
    stderr = watcher.stderr.read().decode()
    assert code == 0, stderr
    assert "Traceback" not in stderr, stderr
    assert log_path.read_text().rstrip().endswith("stopped watching")
