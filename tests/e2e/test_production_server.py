"""The production entry point (`manage.py serve --workers N`, README "Configuration and
deployment"): uvicorn worker processes serving config.asgi:application, answering both wire
generations. A 2025-11-25 session lives in the database, so it is used across workers: each
request below comes on its own connection and may reach either worker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from .servers import (
    LEGACY,
    Server,
    base_env,
    legacy_call,
    legacy_initialize,
    logs_on_failure,
    modern_call,
    prepare_database,
    request,
)

pytestmark = pytest.mark.e2e

SERVE = ["manage.py", "serve", "--host", "127.0.0.1", "--port", "{port}", "--workers", "2"]


@pytest.fixture(scope="module")
def production(tmp_path_factory):
    folder = tmp_path_factory.mktemp("serve")
    env = base_env(f"sqlite:///{folder}/serve.sqlite3")
    prepare_database(env)
    with Server("serve", env, folder, command=SERVE) as server:
        yield server


def worker_processes(pid: int) -> list[int]:
    """The child processes of ``pid`` running Python (uvicorn's workers), from /proc."""
    children = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            cmdline = Path(f"/proc/{child}/cmdline").read_bytes()
            if b"python" in cmdline:
                children.append(int(child))
    return children


def test_serve_runs_the_application_on_uvicorn_workers(production):
    status, headers, _ = asyncio.run(request(production.port, "GET", "/admin/login/"))
    with logs_on_failure(production):
        assert status == 200
        assert headers.get("server") == "uvicorn"  # not daphne (make run's server)
        assert len(worker_processes(production.proc.pid)) >= 2


def test_serve_answers_2026_07_28_discovery_and_prompts_list(production):
    with logs_on_failure(production):
        discovered = asyncio.run(modern_call(production.port, "server/discover"))
        assert "2026-07-28" in discovered["supportedVersions"]
        listed = asyncio.run(modern_call(production.port, "prompts/list"))
        assert "test_simple_prompt" in [p["name"] for p in listed["prompts"]]


def test_serve_holds_a_2025_11_25_session_across_its_workers(production):
    async def session() -> tuple[list[str], list[dict]]:
        sid = await legacy_initialize(production.port)
        names = [p["name"] for p in (await legacy_call(production.port, sid, "prompts/list"))["prompts"]]
        # Several requests, each on a new connection: with two workers some reach the other one.
        results = [await legacy_call(production.port, sid, "prompts/get", {"name": "test_simple_prompt"}, rid=n)
                   for n in range(3, 9)]
        status, _, _ = await request(production.port, "DELETE", headers={
            "Mcp-Session-Id": sid, "MCP-Protocol-Version": LEGACY})
        assert status in (200, 202, 204), status
        return names, results

    with logs_on_failure(production):
        names, results = asyncio.run(session())
        assert "test_simple_prompt" in names
        assert all(result["messages"] for result in results)
