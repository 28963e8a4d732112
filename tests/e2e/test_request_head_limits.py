"""Request limits against real servers: daphne (as `make run` and bin/conformance start it) and
uvicorn (as the README recommends; h11 with the buffer the README asks of it) answer an oversized
head 431 and an oversized body 413 with a JSON-RPC error body, never a silent close, and daphne
writes none of a refused body anywhere; a head that does not arrive is timed out on daphne (408).
Ordinary requests are unaffected."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from .servers import Server, base_env, modern_body, modern_headers, prepare_database, request

pytestmark = pytest.mark.e2e
HEAD_TIMEOUT = 2.0
MIB = 1024 * 1024
UVICORN = {
    "httptools": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--http", "httptools",
                  "--log-level", "warning", "config.asgi:application"],
    # h11 refuses a head it has more than this many bytes of unparsed (16 KiB by default) with its
    # own bare 400, before the application sees it, when the head arrives in more than one read.
    "h11": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--http", "h11",
            "--h11-max-incomplete-event-size", "1048576", "--log-level", "warning",
            "config.asgi:application"],
}


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("head-limits")
    env = base_env(f"sqlite:///{folder}/limits.sqlite3")
    prepare_database(env)
    env["REQUEST_HEAD_TIMEOUT_SECONDS"] = str(HEAD_TIMEOUT)
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


def written_by(server) -> int:
    """Bytes the server process has passed to write() so far (files, logs, pipes: /proc/PID/io)."""
    for line in Path(f"/proc/{server.proc.pid}/io").read_text().splitlines():
        if line.startswith("wchar:"):
            return int(line.split()[1])
    raise AssertionError("no wchar in /proc/PID/io")


async def send_body(port: int, path: str, head: bytes, body_chunks, timeout: float = 10.0) -> tuple[int, bytes]:
    """Send ``head`` and then ``body_chunks`` while reading the answer; stop sending once it came."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(head)

    async def pump():
        try:
            for chunk in body_chunks:
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, OSError):
            pass  # the server answered and closed: the rest is not wanted

    sender = asyncio.create_task(pump())
    try:
        status_line = await asyncio.wait_for(reader.readline(), timeout)
        rest = b""
        while b"\r\n\r\n" not in rest or not rest.rstrip().endswith(b"}"):
            chunk = await asyncio.wait_for(reader.read(64 * 1024), timeout)
            if not chunk:
                break
            rest += chunk
    finally:
        sender.cancel()
        writer.close()
    return int(status_line.split()[1]), rest


@pytest.mark.parametrize("name", ["daphne", "uvicorn-httptools", "uvicorn-h11"])
@pytest.mark.parametrize("path", ["/mcp", "/admin/login/"])
def test_a_300_mib_unauthenticated_post_is_refused_413_on_its_content_length_and_stored_nowhere(
        servers, name, path):
    server = servers[name]
    before = written_by(server)
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {300 * MIB}\r\n\r\n").encode()
    status, rest = asyncio.run(send_body(server.port, path, head, (b"x" * MIB for _ in range(8))))
    assert status == 413, rest[:300]
    assert b"Payload Too Large" in rest
    assert written_by(server) - before < MIB  # not spooled to a temporary file (daphne used to write it all)


@pytest.mark.parametrize("name", ["daphne", "uvicorn-httptools", "uvicorn-h11"])
def test_a_chunked_body_is_refused_413_once_it_passes_the_limit(servers, name):
    server = servers[name]
    before = written_by(server)
    chunk = b"x" * 256 * 1024
    frames = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(40))  # 10 MiB, over /mcp's 1 MiB
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    status, rest = asyncio.run(send_body(server.port, "/mcp", head, frames))
    assert status == 413, rest[:300]
    assert written_by(server) - before < 2 * MIB


def test_daphne_times_out_request_heads_that_do_not_arrive(servers):
    """Slow clients that open connections and send part of a head (or nothing) lose them after
    REQUEST_HEAD_TIMEOUT_SECONDS: 408 when part of a head came, a plain close otherwise."""
    port = servers["daphne"].port

    async def slow_clients():
        started = time.monotonic()
        partial = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        silent = [await asyncio.open_connection("127.0.0.1", port) for _ in range(20)]
        for _reader, writer in partial:
            writer.write(b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        answers = []
        for reader, _writer in partial + silent:
            answers.append(await asyncio.wait_for(reader.read(), HEAD_TIMEOUT + 10))
        elapsed = time.monotonic() - started
        for _reader, writer in partial + silent:
            writer.close()
        return answers, elapsed

    answers, elapsed = asyncio.run(slow_clients())
    assert all(answer.startswith(b"HTTP/1.1 408 Request Timeout") for answer in answers[:20]), answers[0][:200]
    assert all(answer == b"" for answer in answers[20:])
    assert elapsed < HEAD_TIMEOUT + 5
    status, _, body = asyncio.run(request(port, "POST", headers=modern_headers("prompts/list"),
                                          json_body=modern_body("prompts/list")))
    assert status == 200  # the server kept serving meanwhile


def test_daphne_keeps_an_idle_kept_alive_connection_past_the_head_timeout(servers):
    """Clients reuse a pooled connection after a pause without retrying: the head timeout times
    heads, not the wait between requests (Twisted's idle timeout bounds that)."""
    port = servers["daphne"].port
    body = json.dumps(modern_body("prompts/list")).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in {**modern_headers("prompts/list"), "Host": "127.0.0.1",
                                                 "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
                                                 "Content-Length": len(body)}.items())
    request_bytes = f"POST /mcp HTTP/1.1\r\n{head}\r\n".encode() + body

    async def twice():
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        statuses = []
        for pause in (0, HEAD_TIMEOUT + 1.5):
            await asyncio.sleep(pause)
            writer.write(request_bytes)
            await writer.drain()
            status = await asyncio.wait_for(reader.readline(), 10)
            headers = {}
            while (line := await asyncio.wait_for(reader.readline(), 10)) not in (b"\r\n", b""):
                name, _, value = line.decode().partition(":")
                headers[name.strip().lower()] = value.strip()
            await asyncio.wait_for(reader.readexactly(int(headers["content-length"])), 10)
            statuses.append(int(status.split()[1]))
        writer.close()
        return statuses

    assert asyncio.run(twice()) == [200, 200]
