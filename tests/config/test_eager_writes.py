"""Twisted TCP writes go to the socket at once when nothing is queued, and keep Twisted's order,
buffering and loss handling otherwise."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import tcp
from twisted.internet.protocol import Protocol

from config.eager_writes import install_eager_writes


class RecordingReactor:
    """Just what a tcp.Connection asks of its reactor here: being watched for writability."""

    def __init__(self) -> None:
        self.writers: set = set()
        self.writes_armed = 0

    def addWriter(self, writer) -> None:  # noqa: N802 - Twisted's interface
        self.writes_armed += 1
        self.writers.add(writer)

    def removeWriter(self, writer) -> None:  # noqa: N802
        self.writers.discard(writer)

    def addReader(self, reader) -> None:  # noqa: N802
        pass

    def removeReader(self, reader) -> None:  # noqa: N802
        pass


@pytest.fixture
def connection(monkeypatch):
    """A Twisted TCP connection over a socket pair, with eager writes installed for this test."""
    for name in ("write", "writeSequence"):
        monkeypatch.setattr(tcp.Connection, name, getattr(tcp.Connection, name))
    monkeypatch.setattr(tcp.Connection, "_registry_eager_writes", False, raising=False)
    assert install_eager_writes()
    ours, peer = socket.socketpair()
    ours.setblocking(False)
    peer.settimeout(2)
    reactor = RecordingReactor()
    conn = tcp.Connection(ours, Protocol(), reactor)
    conn.connected = True
    yield conn, peer, reactor
    ours.close()
    peer.close()


def read_exactly(peer: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        data += peer.recv(size - len(data))
    return data


def drain(conn, reactor, peer, size: int) -> bytes:
    """Play the reactor: write while the connection asks to, reading the peer side meanwhile."""
    data = b""
    while len(data) < size:
        if conn in reactor.writers:
            conn.doWrite()
        peer.setblocking(False)
        try:
            data += peer.recv(1 << 20)
        except BlockingIOError:
            pass
    return data


def test_a_write_with_nothing_queued_reaches_the_socket_without_arming_the_reactor(connection):
    conn, peer, reactor = connection
    conn.write(b"event: message\ndata: {}\n\n")
    assert read_exactly(peer, 25) == b"event: message\ndata: {}\n\n"
    assert reactor.writes_armed == 0 and conn._tempDataLen == 0


def test_a_write_sequence_goes_out_as_one_send(connection):
    conn, peer, reactor = connection
    conn.writeSequence([b"1a\r\n", b"x" * 26, b"\r\n"])
    assert read_exactly(peer, 32) == b"1a\r\n" + b"x" * 26 + b"\r\n"
    assert reactor.writes_armed == 0


def test_what_the_socket_does_not_take_is_buffered_and_later_writes_keep_their_order(connection):
    conn, peer, reactor = connection
    big = bytes(range(256)) * 16384  # 4 MiB: more than a socket buffer takes at once
    conn.write(big)
    assert 0 < conn._tempDataLen < len(big) and reactor.writes_armed == 1
    conn.write(b"after")  # queued behind the rest, never sent ahead of it
    conn.writeSequence([b"and ", b"last"])
    assert drain(conn, reactor, peer, len(big) + 13) == big + b"afterand last"


def test_a_write_to_a_lost_connection_is_left_to_twisted_and_raises_nothing(connection):
    conn, peer, reactor = connection
    peer.close()
    conn.write(b"x" * 100_000)  # EPIPE/ECONNRESET: buffered; the reactor's doWrite reports the loss
    assert reactor.writes_armed == 1
    assert isinstance(conn.doWrite(), Exception)


def test_installing_twice_patches_once(connection):
    write = tcp.Connection.write
    assert install_eager_writes()
    assert tcp.Connection.write is write
