"""Real server process, real client: the official MCP Python SDK (``mcp.Client``) against
``config.asgi:application`` under uvicorn, at 2026-07-28 and through the 2025-11-25 handshake."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.e2e.servers import prepare_database

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server_url(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mcp-e2e")
    env = dict(os.environ, DATABASE_URL=f"sqlite:///{tmp}/e2e.sqlite3", MCP_ALLOW_ANONYMOUS="1",
               ALLOWED_HOSTS="127.0.0.1,localhost", DJANGO_SETTINGS_MODULE="config.settings")
    env.pop("REDIS_URL", None)
    prepare_database(env)
    port = _free_port()
    log = open(tmp / "server.log", "wb")  # noqa: SIM115 - closed in teardown
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "--host", "127.0.0.1", "--port", str(port),
                             "--log-level", "warning", "config.asgi:application"],
                            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail(f"server did not start: {(tmp / 'server.log').read_text()[-2000:]}")
            time.sleep(0.1)
    yield f"http://127.0.0.1:{port}/mcp"
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
    log.close()


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_official_sdk_client_lists_gets_reads_completes_and_calls_tools(server_url, mode):
    import mcp_types as types
    from mcp import Client

    async with Client(server_url, mode=mode, cache=None, read_timeout_seconds=10) as client:
        assert client.protocol_version == ("2026-07-28" if mode != "legacy" else "2025-11-25")
        prompts = await client.list_prompts()
        assert {p.name for p in prompts.prompts} >= {"test_simple_prompt", "test_prompt_with_arguments"}
        got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "zebra", "arg2": "owl"})
        assert "zebra" in got.messages[0].content.text and "owl" in got.messages[0].content.text
        resources = await client.list_resources()
        assert "test://static-text" in {str(r.uri) for r in resources.resources}
        text = await client.read_resource("test://static-text")
        assert text.contents[0].text.startswith("This is the content")
        templated = await client.read_resource("test://template/42/data")
        assert "42" in templated.contents[0].text
        completion = await client.complete(types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
                                           {"name": "arg1", "value": ""})
        assert isinstance(completion.completion.values, list)
        tools = await client.list_tools()
        assert {t.name for t in tools.tools} == {"get_prompt", "read_resource", "search_registry"}
        called = await client.call_tool("read_resource", {"uri": "test://static-text"})
        assert called.is_error is False and called.content[0].type == "resource"
