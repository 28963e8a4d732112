"""daphne's connection behind an ASGI ``send``: a synchronous write, so a notification reaches a
parked stream without a task switch, and a way to tell that the client has stopped reading.

A notification fanned out to 1,000 open streams used to wake 1,000 stream tasks, each of which
then awaited ``send``: the hub's own loop over the listeners was a small part of the cost. daphne's
``send`` is ``functools.partial(Server.handle_reply, protocol)``, a coroutine that never suspends:
it checks that the connection is still there and calls ``protocol.handle_reply(message)``, which
writes to Twisted at once. ``DaphneConnection.write`` does the same two steps as a plain call, so
the hub can write a frame to an idle stream while it walks the listeners (mcp_endpoint/mailbox.py,
``Mailbox.deliver``).

Because daphne's send never waits, a client that stops reading never slows its stream down:
Twisted queues whatever the kernel does not take, without end. ``backed_up`` reads Twisted's own
high-water mark (the HTTP channel is paused once more than its buffer size is queued), so the
stream loop can cut that one client off instead (``LISTENER_QUEUE_SIZE``'s promise: once that
many frames went in while it stayed backed up, mcp_endpoint/consumers.py).

Any other server's ``send`` (uvicorn, the test communicators) is not recognised, and its streams
keep the asynchronous path, which is always correct, only slower.
"""

from __future__ import annotations

import functools
from typing import Any


class DaphneConnection:
    """One daphne HTTP connection, reached through the ``send`` daphne gave the application."""

    __slots__ = ("connections", "protocol")

    def __init__(self, connections: dict[Any, dict[str, Any]], protocol: Any) -> None:
        self.connections = connections
        self.protocol = protocol

    def write(self, message: dict[str, Any]) -> None:
        """What ``await send(message)`` does (daphne's Server.handle_reply), as a plain call: a
        connection that is gone or going takes nothing."""
        details = self.connections.get(self.protocol)
        if details is None or details.get("disconnected", None):
            return
        self.protocol.handle_reply(message)

    def backed_up(self) -> bool:
        """Twisted holds more unsent bytes for this client than its buffer size (64 KiB on top of
        what the kernel took): the client is not reading."""
        channel = getattr(self.protocol, "channel", None)
        return bool(getattr(channel, "_waitingForTransport", False))

    def abort(self) -> None:
        """Drop the connection now, with whatever is still queued for it (a client that does not
        read would otherwise hold that memory for as long as it keeps the socket open)."""
        transport = getattr(getattr(self.protocol, "channel", None), "transport", None)
        if transport is not None:
            transport.abortConnection()


def daphne_connection(send: Any) -> DaphneConnection | None:
    """The connection behind ``send`` when ``send`` is daphne's; None for any other server."""
    func = getattr(send, "func", None)
    server = getattr(func, "__self__", None)
    if not (isinstance(send, functools.partial) and getattr(func, "__name__", None) == "handle_reply"
            and type(server).__module__ == "daphne.server" and len(send.args) == 1 and not send.keywords):
        return None
    protocol = send.args[0]
    connections = getattr(server, "connections", None)
    if not isinstance(connections, dict) or not callable(getattr(protocol, "handle_reply", None)):
        return None
    return DaphneConnection(connections, protocol)
