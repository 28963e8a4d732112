"""Twisted TCP writes that go straight to the socket when nothing is queued before them.

Twisted buffers every ``transport.write`` and sends it on the reactor's next writable event:
under daphne's asyncio reactor that is an ``add_writer`` (one ``epoll_ctl``), a loop turn with
Twisted's logging context around the callback, the ``send``, and a ``remove_writer`` (another
``epoll_ctl``). For a request that is noise; for a notification fanned out to 1,000 open
streams it is most of the cost (bench/notify.py: commit -> last of 1,000 listeners went from
p50 39 ms / p99 52 ms with buffered writes to the figures in the README with these).

So when a connection's buffer is empty, its write tries ``send`` at once. Whatever the socket
does not take (a full socket buffer, an error) goes through Twisted's own buffered path, which
keeps the order, pauses producers and reports a lost connection exactly as before.

Only a plain send is taken: a connection that started TLS (``startTLS``: its bytes belong to
the TLS layer, a send would put plaintext on the wire), one being aborted (what is written
after ``abortConnection`` is dropped) and a UNIX connection with file descriptors queued (they
travel with the next bytes, through its own ``writeSomeData``) keep Twisted's path.
"""

from __future__ import annotations

import sys
from typing import Any, Sequence


def install_eager_writes() -> bool:
    """Patch Twisted's TCP connections (only where Twisted is already serving: daphne imported
    it before loading the application); returns whether they are patched (idempotent)."""
    if "twisted.internet.tcp" not in sys.modules:
        return False
    from twisted.internet import tcp

    connection = tcp.Connection
    if getattr(connection, "_registry_eager_writes", False):
        return True
    buffered_write = connection.write
    buffered_write_sequence = connection.writeSequence

    def write(self: Any, data: bytes) -> None:
        # Nothing queued: no bytes left in either of Twisted's buffers, and the connection open
        # (and a plain one: no TLS layer, no abort under way, no file descriptor waiting).
        if (type(data) is bytes and data and not self._tempDataLen and self.offset == len(self.dataBuffer)
                and self.connected and not self.disconnecting and not self._writeDisconnected
                and not self.TLS and not self._aborting and not getattr(self, "_sendmsgQueue", None)):
            try:
                sent = self.socket.send(data)
            except OSError:  # full (EAGAIN, ENOBUFS) or lost: Twisted's path retries or reports it
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
        buffered_write(self, data)

    def write_sequence(self: Any, iovec: Sequence[bytes]) -> None:
        if type(iovec) in (list, tuple) and iovec and all(type(part) is bytes for part in iovec):
            write(self, b"".join(iovec))
            return
        buffered_write_sequence(self, iovec)

    connection.write = write
    connection.writeSequence = write_sequence
    connection._registry_eager_writes = True
    return True
