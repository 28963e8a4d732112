"""Running one client against one server: the drivers, their JSON lines, one row of results.

ts_driver.mjs (TypeScript SDKs, and mcp-remote through the TS SDK's stdio client), py_driver.py
(Python SDK 1.x/2.x, fastmcp) and the Inspector CLI (one process per method). Every wait is
bounded; a driver that dies is reported on the first operation it did not report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from matrix_clients import AUTO, LEGACY, MODERN, Client
from matrix_paths import CACHE, HERE, PY
from matrix_servers import Server

OPS = [
    "init",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/read",
    "resources/templates/list",
    "completion",
    "errors",
    "subscribe/listen",
]

Row = dict[str, tuple[str, str]]  # op -> (status "pass"|"FAIL"|"n/a", detail)


def parse_lines(text: str) -> Row:
    row: Row = {}
    for line in text.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and "op" in item:
            op = "subscribe/listen" if item["op"] in ("subscribe", "listen") else item["op"]
            if op == "crash":  # the driver died: on the first operation it did not report
                op = next((o for o in OPS if o not in row), "init")
            row[op] = ("pass" if item["ok"] else "FAIL", item.get("detail", ""))
    return row


def run(cmd: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 120) -> tuple[int, str, str]:
    try:
        done = subprocess.run(
            cmd, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired as exc:
        return (
            -1,
            (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""),
            f"timed out after {timeout} s",
        )
    return done.returncode, done.stdout, done.stderr


def run_ts(client: Client, generation: str, server: Server, stdio: list[str] | None = None) -> Row:
    folder = CACHE / client.slug
    shutil.copy(HERE / "ts_driver.mjs", folder / "ts_driver.mjs")
    cmd = ["node", "ts_driver.mjs", "--sdk", client.flavor or "v1", "--generation", generation]
    cmd += ["--stdio", json.dumps(stdio)] if stdio else ["--url", server.url]
    env = dict(os.environ, TRIGGER=server.trigger(), MCP_REMOTE_CONFIG_DIR=str(folder / "auth-state"))
    code, out, err = run(cmd, cwd=folder, env=env)
    row = parse_lines(out)
    if not row:
        row["init"] = ("FAIL", f"driver exit {code}: {err.strip()[-250:]}")
    return row


def run_py(client: Client, generation: str, server: Server) -> Row:
    python = PY if client.kind == "project" else str(CACHE / client.slug / "bin" / "python")
    cmd = [
        python,
        str(HERE / "py_driver.py"),
        "--flavor",
        client.flavor,
        "--url",
        server.url,
        "--generation",
        generation,
    ]
    code, out, err = run(cmd, cwd=Path(tempfile.gettempdir()), env=dict(os.environ, TRIGGER=server.trigger()))
    row = parse_lines(out)
    if not row:
        row["init"] = ("FAIL", f"driver exit {code}: {err.strip()[-250:]}")
    return row


def inspector_command(client: Client) -> list[str]:
    bin_dir = CACHE / client.slug / "node_modules" / ".bin"
    return [str(bin_dir / "mcp-inspector"), "--cli"]


def run_inspector(client: Client, generation: str, server: Server, env: dict[str, str] | None = None) -> Row:
    """One Inspector CLI process per method; the output is the result as JSON."""
    base = [*inspector_command(client), server.url, "--transport", "http"]
    modern = client.version.startswith("2.")
    if modern:
        base += ["--protocol-era", {MODERN: "modern", AUTO: "auto"}.get(generation, "legacy")]
    cwd = CACHE / client.slug
    if env is None:
        env = dict(os.environ, HOME=str(cwd / "home"))
        (cwd / "home").mkdir(exist_ok=True)
    row: Row = {}

    def call(op: str, extra: list[str], check: str) -> None:
        code, out, err = run(base + extra, cwd=cwd, env=env, timeout=60)
        if code == 0 and check in out:
            row[op] = ("pass", "")
        else:
            row[op] = ("FAIL", f"exit {code}: {(err.strip() or out.strip())[-250:]}")

    if modern:
        code, out, err = run([*base, "--method", "initialize"], cwd=cwd, env=env, timeout=60)
        version = re.search(r'"protocolVersion":\s*"([^"]+)"', out)
        got = version.group(1) if version else None
        row["init"] = (
            "pass" if got == (MODERN if generation == AUTO else generation) else "FAIL",
            f"-> {got}" if got else f"exit {code}: {(err.strip() or out.strip())[-250:]}",
        )
    call("prompts/list", ["--method", "prompts/list"], "test_prompt_with_arguments")
    call(
        "prompts/get",
        [
            "--method",
            "prompts/get",
            "--prompt-name",
            "test_prompt_with_arguments",
            "--prompt-args",
            "arg1=a1",
            "arg2=b2",
        ],
        "arg1='a1'",
    )
    call("resources/list", ["--method", "resources/list"], "test://static-text")
    call(
        "resources/read",
        ["--method", "resources/read", "--uri", "test://template/123/data"],
        "Data for ID: 123",
    )
    call("resources/templates/list", ["--method", "resources/templates/list"], "test://template/{id}/data")
    code, out, err = run(
        [*base, "--method", "resources/read", "--uri", "test://nonexistent"], cwd=cwd, env=env, timeout=60
    )
    # -32002 until 2025-11-25, -32602 at 2026-07-28; 2.11 prints the message without the code
    expected = "-32602" if modern and generation != LEGACY else "-32002"
    said = out + err
    row["errors"] = (
        ("pass", "")
        if code != 0 and (expected in said or "Resource not found: test://nonexistent" in said)
        else ("FAIL", f"unknown URI: exit {code}: {(err.strip() or out.strip())[-200:]}")
    )
    if not modern:
        row["init"] = (
            "pass" if row["prompts/list"][0] == "pass" else "FAIL",
            "initialize (implicit, each method)",
        )
    # The --cli lists its methods; neither completion nor subscribe is one of them (2.11 builds them
    # for its TUI/daemon only: "Unsupported method ... Supported --cli methods: initialize, tools/list, ...").
    row["completion"] = ("n/a", "--cli has no completion method")
    row["subscribe/listen"] = ("n/a", "--cli has no subscribe/listen method")
    return row


def mcp_remote_proxy(client: Client, server: Server, header: bool) -> list[str]:
    proxy = CACHE / client.slug / "node_modules" / "mcp-remote" / "dist" / "proxy.js"
    cmd = ["node", str(proxy), server.url]  # its defaults, as the README's host config has them (http-first)
    if header:
        cmd += ["--header", f"Authorization: Bearer {server.token}"]
    return cmd
