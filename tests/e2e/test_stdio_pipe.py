"""``manage.py mcp_stdio`` as a real child process on pipes: a 2025-11-25 session subscribes, a
publish committed by another process reaches it as a line on stdout (change-log catch-up, no
channel layer), a 2026-07-28 ``subscriptions/listen`` is acknowledged with its subscription id
and hears the next publish, and closing stdin ends the process with status 0. Logs go to stderr
only: every stdout line is a JSON-RPC message."""

from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

from .servers import (
    LEGACY,
    MODERN,
    ROOT,
    SUB_ID_KEY,
    WATCHED,
    amanage,
    base_env,
    changed_fixture,
    prepare_database,
)

pytestmark = pytest.mark.e2e

META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}


class StdioPeer:
    """The client side of the pipes; records every stdout line so the test can check them all."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.lines: list[bytes] = []
        self.pending: list[dict] = []

    async def send(self, message: dict) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        await self.proc.stdin.drain()

    async def _line(self, timeout: float) -> dict:
        assert self.proc.stdout is not None
        line = await asyncio.wait_for(self.proc.stdout.readline(), timeout)
        if not line:
            raise EOFError("mcp_stdio closed stdout")
        self.lines.append(line)
        return json.loads(line)  # anything but JSON on stdout fails here

    async def next(self, want, timeout: float = 5.0) -> dict:
        """The first message (already read or still to come) for which ``want(message)`` holds."""
        for message in self.pending:
            if want(message):
                self.pending.remove(message)
                return message
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no matching line on stdout within {timeout} s; unmatched: {self.pending}")
            try:
                message = await self._line(left)
            except TimeoutError:
                raise AssertionError(f"no matching line on stdout within {timeout} s; "
                                     f"unmatched: {self.pending}") from None
            if want(message):
                return message
            self.pending.append(message)

    async def call(self, rid: int, method: str, params: dict | None = None) -> dict:
        await self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params or {}})
        reply = await self.next(lambda m: m.get("id") == rid and "method" not in m)
        assert "error" not in reply, reply
        return reply["result"]


def updated(uri: str, sub_id=None):
    def want(message: dict) -> bool:
        if message.get("method") != "notifications/resources/updated" or message["params"].get("uri") != uri:
            return False
        meta = message["params"].get("_meta")
        return (meta is None) if sub_id is None else (meta == {SUB_ID_KEY: sub_id})
    return want


async def test_stdio_session_and_listen_receive_publishes_from_another_process(tmp_path):
    env = base_env(f"sqlite:///{tmp_path}/stdio.sqlite3")
    prepare_database(env)
    stderr_path = tmp_path / "stdio.stderr"
    with open(stderr_path, "wb") as stderr:
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "manage.py", "mcp_stdio", cwd=ROOT, env=env, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=stderr)
        peer = StdioPeer(proc)
        try:
            init = await peer.call(1, "initialize", {"protocolVersion": LEGACY, "capabilities": {},
                                                     "clientInfo": {"name": "e2e-stdio", "version": "1"}})
            assert init["protocolVersion"] == LEGACY
            assert init["capabilities"]["resources"]["subscribe"] is True
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            assert await peer.call(2, "resources/subscribe", {"uri": WATCHED}) == {}
            got = await peer.call(3, "prompts/get", {"name": "test_simple_prompt"})
            assert got["messages"], got

            # A publish committed by another process: the stdio process hears it from the change log.
            await amanage(env, "registry_import", str(changed_fixture(tmp_path, "First stdio publish")),
                          "--publish", "--note", "change 1")
            exited = time.monotonic()
            note = await peer.next(updated(WATCHED), timeout=3.0)
            print(f"stdio: resources/updated {time.monotonic() - exited:.3f} s after the import exited")
            assert note == {"jsonrpc": "2.0", "method": "notifications/resources/updated",
                            "params": {"uri": WATCHED}}
            read = await peer.call(4, "resources/read", {"uri": WATCHED})
            assert read["contents"][0]["text"] == "First stdio publish"

            # The 2026-07-28 generation on the same pipe: listen, acknowledged with its id.
            await peer.send({"jsonrpc": "2.0", "id": 50, "method": "subscriptions/listen",
                             "params": {"notifications": {"resourceSubscriptions": [WATCHED]}, "_meta": META}})
            ack = await peer.next(lambda m: m.get("method") == "notifications/subscriptions/acknowledged")
            assert ack["params"]["_meta"] == {SUB_ID_KEY: 50}
            assert ack["params"]["notifications"] == {"resourceSubscriptions": [WATCHED]}

            # The next publish reaches both: the session (plain) and the listen (tagged).
            await amanage(env, "registry_import", str(changed_fixture(tmp_path, "Second stdio publish")),
                          "--publish", "--note", "change 2")
            await peer.next(updated(WATCHED), timeout=3.0)
            await peer.next(updated(WATCHED, sub_id=50), timeout=3.0)

            # EOF on stdin: the process ends, promptly and cleanly.
            assert proc.stdin is not None
            proc.stdin.close()
            closed = time.monotonic()
            rest, _ = await asyncio.wait_for(proc.communicate(), 5)
            print(f"stdio: exited {time.monotonic() - closed:.3f} s after stdin closed")
            peer.lines.extend(line for line in rest.splitlines(keepends=True) if line.strip())
            assert proc.returncode == 0
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            print(f"--- mcp_stdio stderr\n{stderr_path.read_text(errors='replace')[-4000:]}")
            raise
    for line in peer.lines:  # protocol only on stdout, one JSON-RPC message per line
        message = json.loads(line)
        assert message.get("jsonrpc") == "2.0", line
    assert len(peer.lines) >= 8
