"""Oversized request heads against real servers: daphne (as `make run` and bin/conformance start
it) and uvicorn (as the README recommends) answer 431 with a JSON-RPC error body, never a silent
close; ordinary requests on the same server are unaffected."""

from __future__ import annotations

import asyncio
import json

import pytest

from .servers import Server, base_env, modern_body, modern_headers, prepare_database, request

pytestmark = pytest.mark.e2e
UVICORN = {
    "httptools": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--http", "httptools",
                  "--log-level", "warning", "config.asgi:application"],
    "h11": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--http", "h11",
            "--log-level", "warning", "config.asgi:application"],
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("head-limits")
    env = base_env(f"sqlite:///{folder}/limits.sqlite3")
    prepare_database(env)
    started = [Server("daphne", env, folder).start()]
    started += [Server(f"uvicorn-{name}", env, folder, command).start() for name, command in UVICORN.items()]
    yield {server.name: server for server in started}
    for server in started:
        server.stop()


def assert_refused(status, headers, body, limit=16 * 1024):
    assert status == 431, (status, body[:300])
    assert headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == -32600 and f"at most {limit:,} bytes" in error["message"]


@pytest.mark.parametrize("name", ["daphne", "uvicorn-httptools", "uvicorn-h11"])
def test_a_100_kib_mcp_name_header_is_answered_431_with_a_body(servers, name):
    uri = "test://" + "x" * 100 * 1024
    headers = {**modern_headers("resources/read", uri)}
    for attempt in range(3):
        try:
            reply = asyncio.run(request(servers[name].port, "POST", headers=headers,
                                        json_body=modern_body("resources/read", {"uri": uri})))
            break
        except ConnectionResetError:  # the server answered and closed while we were still sending: read again
            if attempt == 2:
                raise
    assert_refused(*reply)


@pytest.mark.parametrize("name", ["daphne", "uvicorn-httptools", "uvicorn-h11"])
def test_many_headers_adding_up_past_the_limit_are_answered_431(servers, name):
    headers = {f"X-Padding-{n}": "y" * 1000 for n in range(30)}
    assert_refused(*asyncio.run(request(servers[name].port, "GET", "/admin/login/", headers=headers)))


@pytest.mark.parametrize("name", ["daphne", "uvicorn-httptools", "uvicorn-h11"])
def test_requests_within_the_limit_are_served(servers, name):
    headers = {**modern_headers("prompts/list"), "X-Padding": "y" * 8000}
    status, _, body = asyncio.run(request(servers[name].port, "POST", headers=headers,
                                          json_body=modern_body("prompts/list")))
    assert status == 200 and "prompts" in json.loads(body)["result"]
