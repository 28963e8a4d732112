"""Request-head limits: the ASGI layer and Twisted's HTTP channel both answer 431 with a body."""

from __future__ import annotations

import json

import pytest
from channels.testing import ApplicationCommunicator
from twisted.internet.testing import StringTransport
from twisted.web import http

from config.http_limits import RequestHeadLimit, install_twisted_limits


async def inner_app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"inner"})


def scope_with(headers):
    return {"type": "http", "method": "POST", "path": "/mcp", "raw_path": b"/mcp", "query_string": b"",
            "headers": headers}


async def run(app, scope, chunks=(b"",)):
    comm = ApplicationCommunicator(app, scope)
    for index, chunk in enumerate(chunks):
        await comm.send_input({"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1})
    start = await comm.receive_output(2)
    body = await comm.receive_output(2)
    await comm.wait(2)
    return start, body


async def test_an_oversized_head_is_answered_431_without_reaching_the_application():
    start, body = await run(RequestHeadLimit(inner_app, limit=1000),
                            scope_with([(b"mcp-name", b"x" * 1000)]), chunks=(b"a" * 10, b"b" * 10))
    assert start["status"] == 431 and (b"content-type", b"application/json") in start["headers"]
    assert "at most 1,000 bytes" in json.loads(body["body"])["error"]["message"]


async def test_a_head_within_the_limit_reaches_the_application():
    start, body = await run(RequestHeadLimit(inner_app, limit=1000), scope_with([(b"mcp-name", b"x" * 500)]))
    assert start["status"] == 200 and body["body"] == b"inner"


@pytest.fixture
def channel():
    assert install_twisted_limits(16 * 1024)
    proto = http.HTTPChannel()
    transport = StringTransport()
    proto.makeConnection(transport)
    yield proto, transport
    proto.connectionLost(None)


def test_twisted_answers_one_overlong_header_line_with_431_and_a_body(channel):
    proto, transport = channel
    proto.dataReceived(b"POST /mcp HTTP/1.1\r\nHost: x\r\nMcp-Name: " + b"x" * 100 * 1024 + b"\r\n\r\n")
    reply = transport.value()
    assert reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b"at most 16,384 bytes" in reply.split(b"\r\n\r\n", 1)[1]


def test_twisted_answers_many_headers_adding_up_past_the_limit_with_431(channel):
    proto, transport = channel
    lines = b"".join(b"X-Pad-%d: %s\r\n" % (n, b"y" * 1000) for n in range(30))
    proto.dataReceived(b"GET / HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")
    assert transport.value().startswith(b"HTTP/1.1 431 ")


def test_twisted_answers_a_malformed_header_with_400_and_a_body(channel):
    proto, transport = channel
    proto.dataReceived(b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n")
    reply = transport.value()
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b'"error"' in reply
