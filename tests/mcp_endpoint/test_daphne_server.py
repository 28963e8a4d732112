"""Twisted's HTTP channel under daphne: oversized heads get 431, bodies over their path's limit
413 before they are stored, heads that do not arrive 408 or a close; and every daphne/Twisted
name those patches (and eager writes, direct sends) rely on is checked at start-up, with a
fallback to the plain path, logged once and reported by `manage.py check`, when one is gone."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from twisted.internet import tcp
from twisted.internet.task import Clock
from twisted.internet.testing import StringTransport
from twisted.web import http

from config.http_limits import refusal_response
from mcp_endpoint.transport import daphne_guard, daphne_server

MIB = 1024 * 1024


def limit_by_path(path: bytes) -> int:
    return MIB if path.split(b"?")[0] == b"/mcp" else 64 * 1024


LIMITS = daphne_server.Limits(head_bytes=16 * 1024, body_bytes=limit_by_path, head_seconds=10.0,
                              answer=refusal_response)


class Recording(http.Request):
    """A request that records what the application would have been given."""

    processed: list[bytes] = []

    def process(self):
        self.content.seek(0)
        Recording.processed.append(self.content.read())


@pytest.fixture
def channel(monkeypatch):
    assert all(daphne_server.install(LIMITS).values())
    Recording.processed = []
    clock = Clock()
    monkeypatch.setattr(daphne_server, "clock", clock)
    monkeypatch.setattr(daphne_server, "_waiting", {})
    monkeypatch.setattr(daphne_server, "_sweep", [])
    proto = http.HTTPChannel()
    proto.requestFactory = Recording
    proto.callLater = clock.callLater
    transport = StringTransport()
    proto.makeConnection(transport)
    yield proto, transport, clock
    proto.connectionLost(None)


def status_of(reply: bytes) -> int:
    return int(reply.split(b" ", 2)[1])


def error_message(reply: bytes) -> str:
    return json.loads(reply.split(b"\r\n\r\n", 1)[1])["error"]["message"]


# --------------------------------------------------------------------------- head limits

def test_twisted_answers_one_overlong_header_line_with_431_and_a_body(channel):
    proto, transport, _clock = channel
    proto.dataReceived(b"POST /mcp HTTP/1.1\r\nHost: x\r\nMcp-Name: " + b"x" * 100 * 1024 + b"\r\n\r\n")
    reply = transport.value()
    assert reply.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert "at most 16,384 bytes" in error_message(reply)


def test_twisted_answers_many_headers_adding_up_past_the_limit_with_431(channel):
    proto, transport, _clock = channel
    lines = b"".join(b"X-Pad-%d: %s\r\n" % (n, b"y" * 1000) for n in range(30))
    proto.dataReceived(b"GET / HTTP/1.1\r\nHost: x\r\n" + lines + b"\r\n")
    assert transport.value().startswith(b"HTTP/1.1 431 ")


def test_twisted_answers_a_malformed_header_with_400_and_a_body(channel):
    proto, transport, _clock = channel
    proto.dataReceived(b"GET / HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n")
    reply = transport.value()
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n") and b'"error"' in reply


# --------------------------------------------------------------------------- body limits

def test_a_declared_length_over_the_paths_limit_is_refused_413_before_any_body_is_stored(channel):
    proto, transport, _clock = channel
    proto.dataReceived(b"POST /admin/login/ HTTP/1.1\r\nHost: x\r\nContent-Length: 314572800\r\n\r\n"
                       + b"u" * 100_000)
    proto.dataReceived(b"u" * 100_000)  # the client keeps sending: read and dropped
    reply = transport.value()
    assert status_of(reply) == 413 and "at most 65,536 bytes" in error_message(reply)
    assert proto.requests[-1].content is None  # no temporary file was ever made for it
    assert transport.disconnecting
    assert Recording.processed == []


def test_a_chunked_body_is_refused_413_once_it_passes_the_limit(channel):
    proto, transport, _clock = channel
    proto.dataReceived(b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"x" * 256 * 1024
    for _ in range(8):  # 2 MiB in all, over /mcp's 1 MiB
        proto.dataReceived(b"%x\r\n%s\r\n" % (len(chunk), chunk))
    proto.dataReceived(b"0\r\n\r\n")
    reply = transport.value()
    assert status_of(reply) == 413 and "at most 1,048,576 bytes" in error_message(reply)
    request = proto.requests[-1]
    assert request.content.tell() <= MIB  # stored no further than the limit
    assert Recording.processed == []


def test_a_body_within_the_limit_reaches_the_application(channel):
    proto, transport, _clock = channel
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    proto.dataReceived(b"POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
    assert Recording.processed == [body] and transport.value() == b""


def test_a_chunked_body_within_the_limit_reaches_the_application(channel):
    proto, _transport, _clock = channel
    proto.dataReceived(b"POST /mcp HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
    assert Recording.processed == [b"hello"]


# --------------------------------------------------------------------------- head timeout

def test_a_head_that_stops_arriving_is_answered_408_when_the_timeout_passes(channel):
    proto, transport, clock = channel
    proto.dataReceived(b"GET /mcp HTTP/1.1\r\nHost: x\r\nX-Slow: ")
    clock.advance(9)
    proto.dataReceived(b"a")  # a byte now and then does not extend the deadline
    assert transport.value() == b""
    clock.advance(1.5)
    reply = transport.value()
    assert status_of(reply) == 408 and "within 10 seconds" in error_message(reply)


def test_a_connection_that_sends_nothing_is_closed_when_the_timeout_passes(channel):
    _proto, transport, clock = channel
    clock.advance(10.5)
    assert transport.value() == b"" and transport.disconnecting


def test_a_complete_head_is_not_timed_even_while_its_request_runs_long(channel):
    proto, transport, clock = channel
    proto.dataReceived(b"GET /mcp HTTP/1.1\r\nHost: x\r\n\r\n")
    clock.advance(3600)  # an SSE stream, a slow application: the head arrived
    assert not transport.disconnecting and transport.value() == b""


def test_a_kept_alive_connection_may_idle_but_its_next_head_once_begun_is_timed(channel):
    """Between requests Twisted's idle timeout applies (clients reuse idle connections without
    retrying); a next head that starts and stalls is timed like the first."""
    proto, transport, clock = channel
    proto.dataReceived(b"GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
    request = proto.requests[0]
    request.setResponseCode(200)
    request.setHeader(b"content-length", b"0")
    request.finish()
    clock.advance(30)
    assert not transport.disconnecting
    answered = len(transport.value())
    proto.dataReceived(b"GET /b HTTP/1.1\r\nHo")
    clock.advance(9)
    assert not transport.disconnecting
    clock.advance(1.5)
    assert status_of(transport.value()[answered:]) == 408


# --------------------------------------------------------------------------- the guard

def test_every_name_the_patches_rely_on_is_present_in_the_installed_versions():
    daphne_guard.diagnose.cache_clear()
    assert daphne_guard.diagnose() == dict.fromkeys(daphne_guard.FEATURES, ())
    assert daphne_guard.check_patches() == []


# What the code of a feature touches that is not Twisted's or daphne's: ours (Limits, the
# connection wrapper), the standard library's (dict, bytes, socket, functools.partial) and the
# reactor's public clock; the classes themselves, reached from their modules.
NOT_THEIRS = {"head_bytes", "body_bytes", "head_seconds", "answer", "protocol", "__dict__", "append", "clear",
              "get", "items", "pop", "join", "send", "seconds", "func", "args", "keywords", "partial",
              "__self__", "__name__", "__module__", "HTTPChannel", "Request", "Connection"}
OPTIONAL = {"_sendmsgQueue"}  # read with a default: only UNIX connections have it
UNTOUCHED = {daphne_guard.BODY_LIMITS: {"gotLength"}}  # relied on not being called yet (see the module)


def _touched(function_names):
    """The attribute names the given functions and classes of daphne_server.py read, call or
    replace (getattr/setattr/hasattr with a literal name, and the names _refuse silences, count)."""
    import ast

    tree = ast.parse(Path(daphne_server.__file__).read_text(encoding="utf-8"))
    found = set()
    for node in tree.body:
        if getattr(node, "name", None) not in function_names:
            continue
        for item in ast.walk(node):
            if isinstance(item, ast.Attribute):
                found.add(item.attr)
            elif (isinstance(item, ast.Call) and isinstance(item.func, ast.Name)
                  and item.func.id in ("getattr", "setattr", "hasattr") and len(item.args) >= 2
                  and isinstance(item.args[1], ast.Constant)):
                found.add(item.args[1].value)
            elif isinstance(item, ast.For) and isinstance(item.iter, ast.Tuple):
                found.update(e.value for e in item.iter.elts if isinstance(e, ast.Constant))
    return {name for name in found if not name.startswith("_registry_")}


@pytest.mark.parametrize("feature", daphne_guard.FEATURES)
def test_the_guard_checks_exactly_the_names_each_patch_touches(feature):
    """The guard's lists used to drift from the code: abortConnection was checked for eager writes,
    which never call it, and not for the refusals and direct sends, which do; the names _refuse
    silences, the channel's callLater and loseConnection, Request.channel and the channel's
    transport were not checked for some of the features that touch them."""
    theirs = _touched(daphne_server.USES[feature]) - NOT_THEIRS - OPTIONAL
    guarded = daphne_guard.guarded_names(feature)
    assert theirs - guarded == set(), "touched but not checked at start-up"
    assert guarded - theirs == UNTOUCHED.get(feature, set()), "checked but touched by no code of the feature"


def test_daphnes_server_names_are_read_from_its_source_without_importing_it():
    assert {"handle_reply", "connections"} <= daphne_guard._server_source_names()


def defining(cls, name):
    return next(klass for klass in cls.__mro__ if name in vars(klass))


GONE = [
    (daphne_guard.HEAD_LIMITS, http.HTTPChannel, "_respondToBadRequestAndDisconnect",
     http.HTTPChannel, "lineReceived"),
    (daphne_guard.BODY_LIMITS, http.Request, "handleContentChunk", http.HTTPChannel, "allHeadersReceived"),
    (daphne_guard.HEAD_TIMEOUT, http.HTTPChannel, "requestDone", http.HTTPChannel, "connectionMade"),
    (daphne_guard.EAGER_WRITES, defining(tcp.Connection, "_aborting"), "_aborting", tcp.Connection, "write"),
]
FLAGS = {daphne_guard.HEAD_LIMITS: "_registry_head_limits", daphne_guard.BODY_LIMITS: "_registry_body_limits",
         daphne_guard.HEAD_TIMEOUT: "_registry_head_timeout", daphne_guard.EAGER_WRITES: "_registry_eager_writes"}


@pytest.fixture
def fresh_guard(monkeypatch):
    """A process that has not diagnosed or logged anything yet (restored afterwards)."""
    daphne_guard.diagnose.cache_clear()
    monkeypatch.setattr(daphne_guard, "_logged", set())
    yield
    daphne_guard.diagnose.cache_clear()


@pytest.mark.parametrize("feature, owner, name, patched_owner, patched", GONE, ids=[g[0] for g in GONE])
def test_a_missing_name_leaves_its_feature_on_the_plain_path_logged_once_and_warned_by_the_check(
        fresh_guard, monkeypatch, caplog, feature, owner, name, patched_owner, patched):
    original = getattr(patched_owner, patched)

    def unpatched(*args):  # stands for Twisted's own method: it must stay in place
        return original(*args)

    monkeypatch.setattr(patched_owner, FLAGS[feature], False, raising=False)
    monkeypatch.setattr(patched_owner, patched, unpatched)
    monkeypatch.delattr(owner, name)
    with caplog.at_level(logging.WARNING, logger="mcp_endpoint.transport.daphne_server"):
        first = daphne_server.install(LIMITS)
        second = daphne_server.install(LIMITS)
    assert first[feature] is False and second[feature] is False
    assert all(on for other, on in first.items() if other != feature)
    assert getattr(patched_owner, patched) is unpatched  # Twisted's path, untouched
    logged = [r.getMessage() for r in caplog.records if feature in r.getMessage()]
    assert len(logged) == 1 and name in logged[0]
    [warning] = daphne_guard.check_patches()
    assert warning.id == "mcp_endpoint.W001" and feature in warning.msg and name in warning.msg


def test_without_twisteds_back_pressure_flag_streams_keep_the_asynchronous_send(fresh_guard, monkeypatch, caplog):
    from .test_direct_send import FakeProtocol, daphne_send

    _server, send = daphne_send(FakeProtocol())
    assert daphne_server.daphne_connection(send) is not None
    daphne_guard.diagnose.cache_clear()
    monkeypatch.delattr(http.HTTPChannel, "_waitingForTransport")
    with caplog.at_level(logging.WARNING, logger="mcp_endpoint.transport.daphne_server"):
        assert daphne_server.daphne_connection(send) is None
        assert daphne_server.daphne_connection(send) is None
    assert len([r for r in caplog.records if daphne_guard.DIRECT_SEND in r.getMessage()]) == 1
    assert [w.id for w in daphne_guard.check_patches()] == ["mcp_endpoint.W001"]


def test_manage_py_check_runs_the_guard():
    from django.core import checks

    assert daphne_guard.check_patches in checks.registry.registry.get_checks()
