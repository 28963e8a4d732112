"""An older stdio host, the TypeScript SDK 1.0 client (it speaks only 2024-11-05), connects and works.

The client is installed from the npm registry into a temporary folder; the test reports itself
skipped with the reason where Node.js/npm or the registry are not at hand.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.e2e.servers import ROOT, base_env, prepare_database

pytestmark = pytest.mark.e2e

SDK = "@modelcontextprotocol/sdk@1.0.4"
PROBE = """
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
const transport = new StdioClientTransport({ command: process.argv[2], args: [process.argv[3], "mcp_stdio"],
  env: process.env });
const client = new Client({ name: "ts-sdk-1.0", version: "1.0.4" }, { capabilities: {} });
await client.connect(transport);
const prompts = await client.listPrompts();
const got = await client.getPrompt({ name: "test_prompt_with_arguments", arguments: { arg1: "a1", arg2: "b2" } });
const read = await client.readResource({ uri: "test://static-text" });
console.log(JSON.stringify({ prompts: prompts.prompts.length, text: got.messages[0].content.text,
  read: read.contents[0].text }));
await client.close();
"""


@pytest.fixture(scope="module")
def ts_sdk_1_0(tmp_path_factory):
    if not (shutil.which("node") and shutil.which("npm")):
        pytest.skip("Node.js and npm are needed to install the TypeScript SDK 1.0 client")
    folder = tmp_path_factory.mktemp("ts-sdk-1.0")
    (folder / "package.json").write_text('{"name": "probe", "version": "1.0.0", "type": "module"}')
    done = subprocess.run(["npm", "install", "--silent", "--no-audit", "--no-fund", SDK], cwd=folder,
                          capture_output=True, text=True, timeout=240)
    if done.returncode != 0:
        pytest.skip(f"could not install {SDK} from the npm registry: {done.stderr[-300:]}")
    (folder / "probe.mjs").write_text(PROBE)
    return folder


def test_the_typescript_sdk_1_0_stdio_client_connects_lists_gets_and_reads(ts_sdk_1_0, tmp_path):
    env = base_env(f"sqlite:///{tmp_path / 'db.sqlite3'}")
    prepare_database(env)
    done = subprocess.run(["node", "probe.mjs", sys.executable, str(ROOT / "manage.py")], cwd=ts_sdk_1_0, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert '"prompts":5' in done.stdout and "arg1='a1', arg2='b2'" in done.stdout
    assert "This is the content of the static text resource." in done.stdout
