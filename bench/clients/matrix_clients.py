"""The clients of the matrix: which, in which versions, speaking which protocol generations, and
how each is installed (npm or a virtualenv under the cache folder, once, reused on the next run).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass

from matrix_paths import CACHE, PY

LEGACY, MODERN = "2025-11-25", "2026-07-28"
AUTO = (
    "auto"  # the client's own negotiation (probe server/discover, fall back to initialize): must pick MODERN
)


@dataclass
class Client:
    name: str
    version: str  # what the table shows (the installed version is read back after install)
    slug: str
    kind: str  # "npm" | "pip" | "project"
    packages: list[str]
    driver: str  # "ts" | "py" | "inspector" | "mcp-remote"
    generations: list[str]
    flavor: str = ""  # ts: v1/v2; py: mcp1/mcp2/fastmcp
    installed: str = ""
    note: str = ""


CLIENTS = [
    Client(
        "TypeScript SDK",
        "1.32",
        "ts-sdk-1.32",
        "npm",
        ["@modelcontextprotocol/sdk@1.32"],
        "ts",
        [LEGACY],
        "v1",
        note="1.x negotiates handshake revisions only (LATEST_PROTOCOL_VERSION 2025-11-25)",
    ),
    Client(
        "TypeScript SDK",
        "2.4",
        "ts-sdk-2.4",
        "npm",
        ["@modelcontextprotocol/client@2.4"],
        "ts",
        [LEGACY, MODERN, AUTO],
        "v2",
    ),
    Client(
        "fastmcp (PyPI)",
        "4.2",
        "py-fastmcp-4.2",
        "pip",
        ["fastmcp==4.2.*"],
        "py",
        [LEGACY, MODERN, AUTO],
        "fastmcp",
        note="npm `fastmcp` has no 4.2 (4.1.0, 4.3.0); PyPI `fastmcp` 4.2.x is the Python client",
    ),
    Client(
        "Python SDK",
        "1.12",
        "py-mcp-1.12",
        "pip",
        ["mcp==1.12.*", "pydantic<2.12"],
        "py",
        ["2025-06-18"],
        "mcp1",
        note="1.12 speaks up to 2025-06-18; it does not import with pydantic 2.12+ (`eval_type_backport` "
        "is gone), so pydantic is held below 2.12 as in its day",
    ),
    Client("Python SDK", "1.30", "py-mcp-1.30", "pip", ["mcp==1.30.*"], "py", [LEGACY], "mcp1"),
    Client("Python SDK (project pin)", "2.3", "project", "project", [], "py", [LEGACY, MODERN, AUTO], "mcp2"),
    Client(
        "mcp-remote",
        "0.15",
        "mcp-remote-0.15",
        "npm",
        ["mcp-remote@0.15", "@modelcontextprotocol/sdk@1.32"],
        "mcp-remote",
        [LEGACY, MODERN, AUTO],
        note="a stdio proxy: the generation is the stdio host's (TypeScript SDK 1.32 for 2025-11-25, 2.4 for "
        "2026-07-28 and auto); mcp-remote relays the JSON-RPC to /mcp over its own HTTP transport",
    ),
    Client(
        "Inspector CLI",
        "0.21",
        "inspector-0.21",
        "npm",
        ["@modelcontextprotocol/inspector@0.21"],
        "inspector",
        [LEGACY],
    ),
    Client(
        "Inspector CLI",
        "1.0",
        "inspector-1.0",
        "npm",
        ["@modelcontextprotocol/inspector@1.0"],
        "inspector",
        [LEGACY],
    ),
    Client(
        "Inspector CLI",
        "2.11",
        "inspector-2.11",
        "npm",
        ["@modelcontextprotocol/inspector@2.11"],
        "inspector",
        [LEGACY, MODERN, AUTO],
    ),
]


def install(client: Client) -> None:
    """npm/pip install into CACHE/slug once; a marker file records success."""
    if client.kind == "project":
        client.installed = _pip_version(PY, "mcp")
        return
    folder = CACHE / client.slug
    marker = folder / ".installed"
    if not marker.exists():
        folder.mkdir(parents=True, exist_ok=True)
        if client.kind == "npm":
            (folder / "package.json").write_text(
                '{"name": "matrix-probe", "version": "1.0.0", "type": "module", "private": true}'
            )
            cmd = ["npm", "install", "--no-audit", "--no-fund", "--loglevel=error", *client.packages]
        else:
            subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True)
            cmd = [str(folder / "bin" / "pip"), "install", "-q", *client.packages]
        done = subprocess.run(cmd, check=False, cwd=folder, capture_output=True, text=True, timeout=600)
        if done.returncode != 0:
            raise RuntimeError(f"installing {client.packages} failed: {done.stderr[-500:]}")
        marker.write_text(" ".join(client.packages))
    if client.kind == "npm":
        main = client.packages[0].rsplit("@", 1)[0]
        client.installed = json.loads((folder / "node_modules" / main / "package.json").read_text())[
            "version"
        ]
    else:
        client.installed = _pip_version(str(folder / "bin" / "python"), client.packages[0].split("==")[0])


def _pip_version(python: str, package: str) -> str:
    out = subprocess.run(
        [python, "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
        check=False,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip() or "?"
