"""The official SDK clients keep listening across a server restart, with their default options.

The TypeScript SDK 1.32 and 2.4, the Python SDK 1.30 and 2.3 and mcp-remote 0.15 (behind the
TypeScript SDK's stdio client) each open a 2025-11-25 session, subscribe to
test://watched-resource and wait; the worker is stopped, stays down for 10 s and is started again
on the same port; then the resource is published. Every client must receive
``notifications/resources/updated``. The SDKs retry a GET stream twice, ``retry:`` apart (1 s
when the server sends none), then give up for good: the registry's priming event carries
STREAM_RETRY_MS (10 s), so the second retry outlasts the restart and its Last-Event-ID replays
what was published meanwhile.

A 2026-07-28 client has no GET stream to retry: the SDKs leave re-listening to the application
(Python 2.3: ``SubscriptionLost``; TypeScript 2.4: ``subscription.closed`` resolves "remote").
The Python 2.3 client below does what the README asks of one (re-listen until it works, then
re-read), and hears the same publish.

The drivers are bench/clients' (the client matrix's), installed from their registries into the
matrix's cache folder ($CLIENT_MATRIX_CACHE, /tmp/mcp-client-matrix), never into the repository;
without Node.js/npm or the registries the test is skipped with the reason.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .servers import ROOT, WATCHED, Server, base_env, changed_fixture, logs_on_failure, manage, prepare_database

pytestmark = pytest.mark.e2e

DOWN_SECONDS = 10.0  # how long the worker stays down (the restart)
WAIT_SECONDS = 90  # how long each client waits for the notification after subscribing
CLIENTS_DIR = ROOT / "bench" / "clients"

RELISTEN = r'''
import asyncio, sys, time
from mcp import Client
from mcp.client.subscriptions import SubscriptionLost

URL, WATCHED, READY = sys.argv[1], sys.argv[2], sys.argv[3]


async def main() -> None:
    # What a 2026-07-28 application does: listen; a stream lost without a result (a restart,
    # an expired token) means listen again, with a pause, and re-read what it shows.
    deadline, first = time.monotonic() + 90, True
    while time.monotonic() < deadline:
        try:
            async with Client(URL, mode="2026-07-28", cache=None, read_timeout_seconds=10) as client:
                async with client.listen(resource_subscriptions=[WATCHED]) as subscription:
                    if first:
                        open(READY, "w").close()
                        first = False
                    else:
                        print("re-listened", flush=True)
                    async for event in subscription:
                        if str(getattr(event, "uri", "")) == WATCHED:
                            text = (await client.read_resource(WATCHED)).contents[0].text
                            print("updated", text, flush=True)
                            return
        except (SubscriptionLost, OSError, Exception) as exc:  # noqa: BLE001 - the server is restarting
            print("lost:", type(exc).__name__, flush=True)
            await asyncio.sleep(1.0)
    print("gave up", flush=True)


asyncio.run(main())
'''


def _matrix(name: str):
    """A module of the client matrix (bench/clients/NAME.py), imported by name as run_matrix.py imports it."""
    if str(CLIENTS_DIR) not in sys.path:
        sys.path.insert(0, str(CLIENTS_DIR))
    return importlib.import_module(name)


@pytest.fixture(scope="module")
def clients():
    """The installed clients, by slug (npm and pip installs into the matrix's cache, reused)."""
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("Node.js and npm are needed to install the TypeScript SDK clients")
    matrix = _matrix("matrix_clients")
    wanted = {"ts-sdk-1.32", "ts-sdk-2.4", "py-mcp-1.30", "project", "mcp-remote-0.15"}
    found = {}
    for client in matrix.CLIENTS:
        if client.slug in wanted:
            try:
                matrix.install(client)
            except Exception as exc:  # no registry at hand
                pytest.skip(f"could not install {client.packages}: {exc}")
            found[client.slug] = client
    return matrix, found


def _driver_commands(matrix, found, url: str) -> dict[str, tuple[list[str], Path]]:
    cache = _matrix("matrix_paths").CACHE
    for slug in ("ts-sdk-1.32", "ts-sdk-2.4", "mcp-remote-0.15"):
        shutil.copy(CLIENTS_DIR / "ts_driver.mjs", cache / slug / "ts_driver.mjs")
    legacy = ["--generation", "2025-11-25"]
    proxy = cache / "mcp-remote-0.15" / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
    return {
        f"TypeScript SDK {found['ts-sdk-1.32'].installed}": (
            ["node", "ts_driver.mjs", "--sdk", "v1", *legacy, "--url", url], cache / "ts-sdk-1.32"),
        f"TypeScript SDK {found['ts-sdk-2.4'].installed}": (
            ["node", "ts_driver.mjs", "--sdk", "v2", *legacy, "--url", url], cache / "ts-sdk-2.4"),
        f"mcp-remote {found['mcp-remote-0.15'].installed}": (
            ["node", "ts_driver.mjs", "--sdk", "v1", *legacy, "--stdio", json.dumps(["node", str(proxy), url])],
            cache / "mcp-remote-0.15"),
        f"Python SDK {found['py-mcp-1.30'].installed}": (
            [str(cache / "py-mcp-1.30" / "bin" / "python"), str(CLIENTS_DIR / "py_driver.py"), "--flavor", "mcp1",
             *legacy, "--url", url], ROOT),
        f"Python SDK {found['project'].installed}": (
            [sys.executable, str(CLIENTS_DIR / "py_driver.py"), "--flavor", "mcp2", *legacy, "--url", url], ROOT),
    }


def _wait_for(paths: list[Path], procs: dict, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not all(p.exists() for p in paths):
        for name, (proc, _log) in procs.items():
            if proc.poll() is not None and not paths[list(procs).index(name)].exists():
                raise AssertionError(f"{name} exited before subscribing: {_log.read_text()[-1500:]}")
        if time.monotonic() > deadline:
            missing = [n for n, p in zip(procs, paths, strict=True) if not p.exists()]
            raise AssertionError(f"not subscribed within {timeout} s: {missing}")
        time.sleep(0.2)


def test_every_official_sdk_client_hears_a_publish_made_after_a_ten_second_restart(clients, tmp_path):
    matrix, found = clients
    env = base_env(f"sqlite:///{tmp_path / 'restart.sqlite3'}")
    prepare_database(env)
    server = Server("daphne", env, tmp_path)
    url = f"http://127.0.0.1:{server.port}/mcp"
    commands = _driver_commands(matrix, found, url)
    commands["Python SDK 2.3, 2026-07-28 listen (re-listens)"] = (
        [sys.executable, "-c", RELISTEN, url, WATCHED, str(tmp_path / "relisten.ready")], ROOT)
    procs: dict[str, tuple[subprocess.Popen, Path]] = {}
    ready: list[Path] = []
    with server, logs_on_failure(server):
        try:
            for index, (name, (cmd, cwd)) in enumerate(commands.items()):
                marker = tmp_path / (f"client{index}.ready" if "re-listens" not in name else "relisten.ready")
                log = tmp_path / f"client{index}.log"
                child_env = dict(os.environ, TRIGGER=f"touch {marker}", NOTIFY_WAIT_MS=str(WAIT_SECONDS * 1000),
                                 NOTIFY_WAIT_SECONDS=str(WAIT_SECONDS),
                                 MCP_REMOTE_CONFIG_DIR=str(tmp_path / "mcp-remote-auth"))
                with open(log, "wb") as out:
                    procs[name] = (subprocess.Popen(cmd, cwd=cwd, env=child_env, stdout=out,
                                                    stderr=subprocess.STDOUT), log)
                ready.append(marker)
            _wait_for(ready, procs, 120)

            server.stop()  # SIGTERM: every stream ends without a final result
            stopped = time.monotonic()
            time.sleep(DOWN_SECONDS)
            server.start()
            back = time.monotonic()
            published = changed_fixture(tmp_path, "Published after the restart")
            manage(env, "registry_import", str(published), "--publish", "--note", "after the restart")
            print(f"down {back - stopped:.1f} s (start included); published {time.monotonic() - stopped:.1f} s "
                  "after the stop")

            outcomes = {}
            for name, (proc, log) in procs.items():
                try:
                    proc.wait(WAIT_SECONDS + 30)
                except subprocess.TimeoutExpired:
                    proc.kill()
                text = log.read_text(errors="replace")
                if "re-listens" in name:
                    outcomes[name] = "updated Published after the restart" in text
                else:
                    lines = [json.loads(line) for line in text.splitlines() if line.startswith('{"op"')]
                    outcomes[name] = any(line["op"] in ("subscribe", "listen") and line["ok"] for line in lines)
            print(f"received after the restart: {outcomes}")
            failed = {name: procs[name][1].read_text(errors='replace')[-800:]
                      for name, ok in outcomes.items() if not ok}
            assert not failed, f"clients that stopped listening for good: {failed}"
        finally:
            for proc, _log in procs.values():
                if proc.poll() is None:
                    proc.kill()
