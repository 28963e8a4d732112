"""Twisted TCP writes go to the socket at once when nothing is queued, and keep Twisted's order,
buffering and loss handling otherwise (the eager-writes patch of mcp_endpoint/transport/daphne_server.py)."""

from __future__ import annotations

import contextlib
import socket

import pytest
from twisted.internet import tcp
from twisted.internet.protocol import Protocol

from mcp_endpoint.transport import daphne_guard, daphne_server

from .test_daphne_server import LIMITS


class RecordingReactor:
    """Just what a tcp.Connection asks of its reactor here: being watched for writability."""

    def __init__(self) -> None:
        self.writers: set = set()
        self.writes_armed = 0

    def addWriter(self, writer) -> None:  # Twisted's interface
        self.writes_armed += 1
        self.writers.add(writer)

    def removeWriter(self, writer) -> None:
        self.writers.discard(writer)

    def addReader(self, reader) -> None:
        pass

    def removeReader(self, reader) -> None:
        pass


@pytest.fixture
def connection(monkeypatch):
    """A Twisted TCP connection over a socket pair, with eager writes installed for this test."""
    for name in ("write", "writeSequence"):
        monkeypatch.setattr(tcp.Connection, name, getattr(tcp.Connection, name))
    monkeypatch.setattr(tcp.Connection, "_registry_eager_writes", False, raising=False)
    assert daphne_server.install(LIMITS)[daphne_guard.EAGER_WRITES]
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
        with contextlib.suppress(BlockingIOError):
            data += peer.recv(1 << 20)
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
    assert daphne_server.install(LIMITS)[daphne_guard.EAGER_WRITES]
    assert tcp.Connection.write is write


def read_available(peer: socket.socket) -> bytes:
    peer.setblocking(False)
    data = b""
    while True:
        try:
            chunk = peer.recv(1 << 20)
        except BlockingIOError:
            return data
        if not chunk:
            return data
        data += chunk


def test_a_connection_that_started_tls_never_sends_plaintext(connection):
    """After startTLS, Connection.write hands the bytes to the TLS layer (ConnectionMixin):
    an eager send would put the application's plaintext on the wire."""
    from twisted.internet.ssl import optionsForClientTLS

    conn, peer, reactor = connection
    conn._tlsClientDefault = True
    conn.startTLS(optionsForClientTLS("example.invalid"))
    while conn in reactor.writers:  # the ClientHello goes out through Twisted's own path
        conn.doWrite()
    hello = read_available(peer)
    assert hello[:1] == b"\x16"  # a TLS handshake record
    conn.write(b"GET /secret-token HTTP/1.1\r\n\r\n")
    conn.writeSequence([b"more ", b"secret-token"])
    while conn in reactor.writers:
        conn.doWrite()
    assert b"secret-token" not in read_available(peer)


def test_a_write_after_abort_connection_is_dropped(connection):
    """abortConnection drops what is buffered and whatever is written until the connection is
    lost (a callLater(0) later): nothing written after it may reach the peer."""
    conn, peer, _reactor = connection
    conn.reactor.callLater = lambda *args, **kwargs: None  # connectionLost would follow on the next turn
    conn.abortConnection()
    conn.write(b"written after the abort")
    assert read_available(peer) == b""


def test_a_unix_connection_sends_a_queued_file_descriptor_with_the_next_bytes(connection):
    """unix.Server's writeSomeData sends queued descriptors along with the first bytes written
    after them (IUNIXTransport.sendFileDescriptor); a bare socket.send would leave them with no
    byte to travel with (FileDescriptorOverrun: the connection is lost)."""
    import array
    import os

    from twisted.internet import unix

    _conn, _peer, reactor = connection
    ours, peer = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    ours.setblocking(False)
    conn = unix.Server(ours, Protocol(), None, None, 0, reactor)
    conn.connected = True
    read_end, write_end = os.pipe()
    try:
        conn.sendFileDescriptor(read_end)
        conn.write(b"x")
        while conn in reactor.writers:
            assert conn.doWrite() is None
        data, ancillary, _flags, _addr = peer.recvmsg(16, socket.CMSG_SPACE(4))
        assert data == b"x"
        fds = array.array("i")
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[:len(payload) - len(payload) % fds.itemsize])
        assert len(fds) == 1
        os.close(fds[0])
    finally:
        os.close(read_end)
        os.close(write_end)
        ours.close()
        peer.close()
