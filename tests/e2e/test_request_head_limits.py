"""Request limits against real servers: daphne (as `make run` and bin/conformance start it) and
uvicorn (as the README recommends; h11 with the buffer the README asks of it) and the production
entry point (`manage.py serve`, uvicorn with the project's settings) answer an oversized
head 431 and an oversized body 413 with a JSON-RPC error body, never a silent close, and do not
reset a client still sending the refused request (it could lose the answer); daphne writes none of
a refused body anywhere; a head that does not arrive is timed out on daphne (408). Ordinary
requests are unaffected."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest

from .servers import Server, base_env, modern_body, modern_headers, prepare_database, request

pytestmark = pytest.mark.e2e
HEAD_TIMEOUT = 2.0
MIB = 1024 * 1024
LIMITS = {"/mcp": MIB, "/admin/login/": 64 * 1024}  # MCP_ENDPOINT["MAX_BODY_BYTES"], FORM_BODY_BYTES
UVICORN = {
    "httptools": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--http", "httptools",
                  "--log-level", "warning", "config.asgi:application"],
    # h11 refuses a head it has more than this many bytes of unparsed (16 KiB by default) with its
    # own bare 400, before the application sees it, when the head arrives in more than one read.
    "h11": ["-m", "uvicorn", "--host", "127.0.0.1", "--port", "{port}", "--http", "h11",
            "--h11-max-incomplete-event-size", "1048576", "--log-level", "warning",
            "config.asgi:application"],
}
# The production entry point (manage.py serve) with one worker, so that the process measured by
# written_by is the one serving; with --http h11 it must pass h11 the buffer above itself.
SERVE = {
    "serve": ["manage.py", "serve", "--port", "{port}", "--workers", "1"],
    "serve-h11": ["manage.py", "serve", "--port", "{port}", "--workers", "1", "--http", "h11"],
}
SERVERS = ["daphne", "uvicorn-httptools", "uvicorn-h11", *SERVE]


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    folder = tmp_path_factory.mktemp("head-limits")
    env = base_env(f"sqlite:///{folder}/limits.sqlite3")
    prepare_database(env)
    env["REQUEST_HEAD_TIMEOUT_SECONDS"] = str(HEAD_TIMEOUT)
    started = [Server("daphne", env, folder).start()]
    started += [Server(f"uvicorn-{name}", env, folder, command).start() for name, command in UVICORN.items()]
    started += [Server(name, env, folder, command).start() for name, command in SERVE.items()]
    yield {server.name: server for server in started}
    for server in started:
        server.stop()


def assert_refused(status, headers, body, limit=16 * 1024, expected=431):
    assert status == expected, (status, body[:300])
    assert headers["content-type"] == "application/json"
    error = json.loads(body)["error"]
    assert error["code"] == -32600 and f"at most {limit:,} bytes" in error["message"]


@dataclass
class Reply:
    status: int | None  # None: no answer came
    headers: dict[str, str]
    body: bytes
    ending: str  # how the server ended the connection: "closed", or the error ("ConnectionResetError")


class _Client(asyncio.Protocol):
    """Keeps every byte received, whatever ends the connection: asyncio's StreamReader raises a
    reset before it hands over what it already holds, so a client built on it can lose an answer
    that arrived."""

    def __init__(self) -> None:
        loop = asyncio.get_running_loop()
        self.received = bytearray()
        self.answered = loop.create_future()  # the whole answer is in, or the connection ended
        self.ended = loop.create_future()  # the server ended the connection: "closed" or the error
        self.writable = loop.create_future()
        self.writable.set_result(None)
        self.lost = False  # asyncio has called connection_lost: the transport is finished

    def data_received(self, data: bytes) -> None:
        self.received += data
        head, sep, body = bytes(self.received).partition(b"\r\n\r\n")
        length = _headers(head).get("content-length")
        if sep and length is not None and len(body) >= int(length) and not self.answered.done():
            self.answered.set_result(None)

    def eof_received(self) -> None:
        self._end("closed")  # and the transport closes

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        self._end("closed" if exc is None else type(exc).__name__)

    def _end(self, how: str) -> None:
        for future in (self.ended, self.answered, self.writable):
            if not future.done():
                future.set_result(how)

    def pause_writing(self) -> None:
        self.writable = asyncio.get_running_loop().create_future()
        if self.ended.done():
            self.writable.set_result(None)

    def resume_writing(self) -> None:
        if not self.writable.done():
            self.writable.set_result(None)


def drop(transport: asyncio.Transport, client: _Client) -> None:
    """Abort the connection unless asyncio has already finished it. CPython 3.11's selector
    transport, closed (by the server's EOF) while our writes were still buffered, finishes the
    connection once the buffer drains without counting it as lost, and a later ``abort()`` then
    fails on the loop it has let go (AttributeError: 'NoneType' object has no attribute
    'call_soon'): a refused body that the server still read to its end set that up."""
    if not client.lost:
        transport.abort()


def _headers(head: bytes) -> dict[str, str]:
    lines = head.decode("latin-1").split("\r\n")[1:]
    return {name.strip().lower(): value.strip() for name, _, value in (line.partition(":") for line in lines)}


async def exchange(port: int, head: bytes, body_chunks: Iterable[bytes] = (), timeout: float = 10.0) -> Reply:
    """Send ``head`` and then ``body_chunks`` while reading the answer, as a client that reads while
    it sends does: once the answer is whole, stop sending, end our side and wait for the server to
    close. A server that closed while we were still sending resets the connection, and a client
    can lose the answer to that (where the kernel drops unread input, or with asyncio's streams)."""
    loop = asyncio.get_running_loop()
    transport, client = await loop.create_connection(_Client, "127.0.0.1", port)
    try:
        transport.write(head)
        for chunk in body_chunks:
            await asyncio.wait_for(asyncio.wait([client.writable, client.answered],
                                                return_when=asyncio.FIRST_COMPLETED), timeout)
            if client.answered.done():
                break
            transport.write(chunk)
        await asyncio.wait_for(asyncio.shield(client.answered), timeout)
        if not transport.is_closing():
            transport.write_eof()
        ending = await asyncio.wait_for(asyncio.shield(client.ended), timeout)
    finally:
        drop(transport, client)
    head_bytes, sep, body = bytes(client.received).partition(b"\r\n\r\n")
    if not sep:
        return Reply(None, {}, bytes(client.received), ending)
    headers = _headers(head_bytes)
    length = int(headers.get("content-length", len(body)))
    return Reply(int(head_bytes.split()[1]), headers, body[:length], ending)


def request_head(method: str, path: str, headers: dict[str, str]) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", "Host: 127.0.0.1", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


@pytest.mark.parametrize("name", SERVERS)
def test_a_100_kib_mcp_name_header_is_answered_431_with_a_body(servers, name):
    uri = "test://" + "x" * 100 * 1024
    body = json.dumps(modern_body("resources/read", {"uri": uri})).encode()
    head = request_head("POST", "/mcp", {**modern_headers("resources/read", uri),
                                         "Content-Type": "application/json",
                                         "Accept": "application/json, text/event-stream",
                                         "Content-Length": str(len(body))})
    reply = asyncio.run(exchange(servers[name].port, head, [body]))
    assert_refused(reply.status, reply.headers, reply.body)
    assert reply.ending == "closed", reply  # not reset while the request was still on its way


@pytest.mark.parametrize("name", SERVERS)
def test_many_headers_adding_up_past_the_limit_are_answered_431(servers, name):
    headers = {f"X-Padding-{n}": "y" * 1000 for n in range(30)}
    assert_refused(*asyncio.run(request(servers[name].port, "GET", "/admin/login/", headers=headers)))


@pytest.mark.parametrize("name", SERVERS)
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


@pytest.mark.parametrize("name", SERVERS)
@pytest.mark.parametrize("path", ["/mcp", "/admin/login/"])
def test_a_300_mib_unauthenticated_post_is_refused_413_on_its_content_length_and_stored_nowhere(
        servers, name, path):
    server = servers[name]
    before = written_by(server)
    head = (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {300 * MIB}\r\n\r\n").encode()
    reply = asyncio.run(exchange(server.port, head, (b"x" * MIB for _ in range(8))))
    assert_refused(reply.status, reply.headers, reply.body, LIMITS[path], expected=413)
    assert b"Payload Too Large" in reply.body
    assert reply.ending == "closed", reply  # not reset while the body was still on its way
    assert written_by(server) - before < MIB  # not spooled to a temporary file (daphne used to write it all)


@pytest.mark.parametrize("name", SERVERS)
def test_a_chunked_body_is_refused_413_once_it_passes_the_limit(servers, name):
    server = servers[name]
    before = written_by(server)
    chunk = b"x" * 256 * 1024
    frames = (b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(40))  # 10 MiB, over /mcp's 1 MiB
    head = (b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            b"Accept: application/json, text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    reply = asyncio.run(exchange(server.port, head, frames))
    assert_refused(reply.status, reply.headers, reply.body, LIMITS["/mcp"], expected=413)
    assert reply.ending == "closed", reply  # not reset while the body was still on its way
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
    status, _, _body = asyncio.run(request(port, "POST", headers=modern_headers("prompts/list"),
                                           json_body=modern_body("prompts/list")))
    assert status == 200  # the server kept serving meanwhile


def test_daphne_keeps_an_idle_kept_alive_connection_past_the_head_timeout(servers):
    """Clients reuse a pooled connection after a pause without retrying: the head timeout times
    heads, not the wait between requests (Twisted's idle timeout bounds that)."""
    port = servers["daphne"].port
    body = json.dumps(modern_body("prompts/list")).encode()
    head = "".join(f"{k}: {v}\r\n" for k, v in {**modern_headers("prompts/list"), "Host": "127.0.0.1",
                                                 "Content-Type": "application/json",
                                                 "Accept": "application/json, text/event-stream",
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


def test_the_exchange_ends_a_connection_asyncio_finished_after_draining_a_closed_buffer():
    """The state that made exchange() fail rather than report: a transport closed with writes
    still buffered, whose buffer then drained (the peer read it), has called connection_lost."""
    async def scenario() -> bool:
        reads = asyncio.Event()

        async def slow_reader(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reads.wait()
            while await reader.read(MIB):
                pass
            writer.close()

        server = await asyncio.start_server(slow_reader, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport, client = await asyncio.get_running_loop().create_connection(_Client, "127.0.0.1", port)
        transport.write(b"x" * 32 * MIB)  # more than the kernel takes: the rest stays buffered
        assert transport.get_write_buffer_size() > 0
        transport.close()
        reads.set()
        await asyncio.wait_for(asyncio.shield(client.ended), 10)
        drop(transport, client)  # raised AttributeError through transport.abort()
        server.close()
        await server.wait_closed()
        return client.lost

    assert asyncio.run(scenario())
