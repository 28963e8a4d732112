#!/usr/bin/env python3
"""The client x generation matrix: real MCP clients, installed from their registries, against the registry.

    .venv/bin/python bench/clients/run_matrix.py [--only SUBSTRING] [--keep]

Installs each client into /tmp/mcp-client-matrix/<name> (npm or a virtualenv; never into the
repository, reused on the next run), serves two throwaway registries holding the conformance
fixtures (tests/fixtures/conformance.yaml, as bin/conformance does): one anonymous, one protected
(MCP_ALLOW_ANONYMOUS=0, OAuth and pre-shared tokens), and runs, for every client and protocol
generation it speaks: initialize/discover, prompts/list, prompts/get with arguments,
resources/list, resources/read (a text resource and a template URI), resources/templates/list,
completion, and resources/subscribe (2025) or subscriptions/listen (2026-07-28) with a publish in
between. Prints one Markdown table; an operation a client cannot do is "n/a" with the reason.

Drivers: ts_driver.mjs (TypeScript SDKs, and mcp-remote through the TS SDK's stdio client),
py_driver.py (Python SDK 1.x/2.x, fastmcp), the Inspector CLI directly (one process per method).
Loopback only; every wait is bounded.

This script runs the matrix and prints the table; its parts are the modules beside it, which
import each other by name (this folder is first on sys.path when the script runs):
matrix_clients.py (the clients and installing them), matrix_servers.py (the throwaway registries),
matrix_drivers.py (one client against one server: a row of results), matrix_oauth.py (the runs
that go through OAuth, with the consent scripted) and matrix_paths.py (where things are).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

from matrix_clients import AUTO, CLIENTS, LEGACY, install
from matrix_drivers import OPS, Row, mcp_remote_proxy, run_inspector, run_py, run_ts
from matrix_oauth import run_inspector_oauth, run_mcp_remote_oauth
from matrix_servers import Server

# ----------------------------------------------------------------------------- table


def cell(op: str, status: str, detail: str) -> str:
    if status == "pass" and op != "init":
        return "pass"
    text = " ".join(detail.split()).replace("|", "\\|")[:160]
    return f"{status} ({text})" if status == "pass" else f"{status}: {text}" if text else status


def table(rows: list[tuple[str, str, str, Row]]) -> str:
    heads = ["client", "version", "generation", *OPS]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    for name, version, generation, row in rows:
        cells = [cell(op, *row[op]) if op in row else "—" for op in OPS]
        lines.append("| " + " | ".join([name, version, generation, *cells]) + " |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run the clients whose name or slug contains this")
    parser.add_argument("--keep", action="store_true", help="keep the servers' folder (logs, databases)")
    args = parser.parse_args()
    if not shutil.which("node") or not shutil.which("npm"):
        print("Node.js and npm are needed for the TypeScript clients", file=sys.stderr)
    folder = Path(tempfile.mkdtemp(prefix="client-matrix-"))
    servers = [Server("open", True, folder), Server("protected", False, folder)]
    rows: list[tuple[str, str, str, Row]] = []
    oauth_detail = ""
    try:
        for server in servers:
            server.start()
        open_server, protected = servers
        for client in CLIENTS:
            if args.only and args.only not in f"{client.name} {client.slug}":
                continue
            print(f"== {client.name} {client.version}", file=sys.stderr, flush=True)
            try:
                install(client)
            except Exception as exc:
                rows.append((client.name, client.version, "-", {"init": ("FAIL", f"install: {exc}")}))
                continue
            shown = f"{client.version} ({client.installed})"
            for generation in client.generations:
                extra: list[tuple[str, str, str, Row]] = []
                if client.driver == "ts":
                    row = run_ts(client, generation, open_server)
                elif client.driver == "py":
                    row = run_py(client, generation, open_server)
                elif client.driver == "inspector":
                    row = run_inspector(client, generation, open_server)
                    if client.version.startswith("2.") and generation != AUTO:
                        extra.append(
                            (
                                f"{client.name} no header (protected: OAuth)",
                                shown,
                                generation,
                                run_inspector_oauth(client, generation, protected),
                            )
                        )
                elif generation == LEGACY:  # stdio client: the TypeScript SDK 1.32 installed beside it
                    rows.append(
                        (
                            f"{client.name} --header (protected)",
                            shown,
                            generation,
                            run_ts(client, generation, protected, mcp_remote_proxy(client, protected, True)),
                        )
                    )
                    oauth, oauth_detail = run_mcp_remote_oauth(client, protected)
                    rows.append((f"{client.name} no header (protected: OAuth)", shown, generation, oauth))
                    row = run_ts(
                        client, generation, open_server, mcp_remote_proxy(client, open_server, False)
                    )
                    rows.append((f"{client.name} (anonymous server)", shown, generation, row))
                    continue
                else:  # a 2026-capable host (TypeScript SDK 2.4 over stdio) launching mcp-remote --header
                    host = next(c for c in CLIENTS if c.slug == "ts-sdk-2.4")
                    install(host)
                    row = run_ts(host, generation, protected, mcp_remote_proxy(client, protected, True))
                    rows.append(
                        (f"{client.name} --header (protected), host TS SDK 2.4", shown, generation, row)
                    )
                    continue
                rows.append((client.name, shown, generation, row))
                rows.extend(extra)
                print(json.dumps({k: v[0] for k, v in row.items()}), file=sys.stderr, flush=True)
    finally:
        for server in servers:
            server.stop()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
        else:
            print(f"servers' logs and databases: {folder}", file=sys.stderr)
    print(table(rows))
    if oauth_detail:
        print(f"\nmcp-remote without --header, requests seen by the server: {oauth_detail}")
    notes = [
        f"- {c.name} {c.version}: {c.note}"
        for c in CLIENTS
        if c.note and (not args.only or args.only in f"{c.name} {c.slug}")
    ]
    if notes:
        print("\n" + "\n".join(notes))
    failed = sum(1 for *_, row in rows for status, _ in row.values() if status == "FAIL")
    print(f"\n{failed} failed operation(s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
