"""A synchronous stand-in for daphne's ASGI ``send``, so a notification reaches a parked stream
without a task switch.

A notification fanned out to 1,000 open streams used to wake 1,000 stream tasks, each of which
then awaited ``send``: the hub's own loop over the listeners was a small part of the cost. daphne's
``send`` is ``functools.partial(Server.handle_reply, protocol)``, a coroutine that never suspends:
it checks that the connection is still there and calls ``protocol.handle_reply(message)``, which
writes to Twisted at once. ``direct_writer`` does the same two steps as a plain call, so the hub
can write a frame to an idle stream while it walks the listeners (mcp_endpoint/mailbox.py,
``Mailbox.deliver``).

Any other server's ``send`` (uvicorn, the test communicators) is not recognised, and its streams
keep the asynchronous path, which is always correct, only slower.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

Writer = Callable[[dict[str, Any]], None]


def direct_writer(send: Any) -> Writer | None:
    """A plain function doing what ``await send(message)`` does, when ``send`` is daphne's."""
    func = getattr(send, "func", None)
    server = getattr(func, "__self__", None)
    if not (isinstance(send, functools.partial) and getattr(func, "__name__", None) == "handle_reply"
            and type(server).__module__ == "daphne.server" and len(send.args) == 1 and not send.keywords):
        return None
    protocol = send.args[0]
    connections = getattr(server, "connections", None)
    if not isinstance(connections, dict) or not callable(getattr(protocol, "handle_reply", None)):
        return None

    def write(message: dict[str, Any]) -> None:
        # daphne's Server.handle_reply: a connection that is gone or going takes nothing.
        details = connections.get(protocol)
        if details is None or details.get("disconnected", None):
            return
        protocol.handle_reply(message)

    return write
