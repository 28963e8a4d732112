#!/usr/bin/env python3
"""Python per stream of the hub's direct write on daphne: daphne's reply path against write_body.

One real Twisted HTTP/1.1 channel (chunked response under way) on a loopback TCP socket, its peer
drained by a subprocess; N frames of a 2026-07-28 `resources/updated` (one stream's share of a
fan-out) written through ``DaphneConnection.write`` (a message dict, daphne's ``handle_reply``,
Twisted's ``Request.write``, ``toChunk``, ``HTTPChannel.writeSequence``, the eager-write patch)
and through ``DaphneConnection.write_body`` (one transport write). Best of R runs, microseconds
per frame including the send syscall; run pinned to one CPU:

  taskset -c 0 .venv/bin/python bench/stream_write.py [-n 5000] [-r 5]
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from mcp_endpoint.transport.daphne_guard import NullReactor as Reactor

FRAME = (b'event: message\ndata: {"jsonrpc":"2.0","method":"notifications/resources/updated","params":'
         b'{"uri":"docs://doc-00001","_meta":{"io.modelcontextprotocol/subscriptionId":1}}}\n\n')


def stream() -> tuple[Any, subprocess.Popen, socket.socket]:
    from daphne.http_protocol import WebRequest
    from twisted.internet import tcp
    from twisted.web import http

    class Request(http.Request):
        handle_reply = WebRequest.handle_reply
        _response_started = False
        client_addr = None
        server = SimpleNamespace(server_name="", log_action=lambda *args: None)

    listener = socket.create_server(("127.0.0.1", 0))
    drain = subprocess.Popen([sys.executable, "-c", "import socket, sys\n"
                              f"s = socket.create_connection(('127.0.0.1', {listener.getsockname()[1]}))\n"
                              "while s.recv(1 << 20): pass"])
    ours, _ = listener.accept()
    listener.close()
    ours.setblocking(False)
    channel = http.HTTPChannel()
    channel.timeOut = None
    transport = tcp.Connection(ours, channel, Reactor())
    transport.connected = True
    transport.getPeer = transport.getHost = lambda: None
    channel.makeConnection(transport)
    request = Request(channel)
    request.clientproto, request.method = b"HTTP/1.1", b"POST"
    request.handle_reply({"type": "http.response.start", "status": 200,
                          "headers": [(b"content-type", b"text/event-stream")]})
    request.handle_reply({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
    return request, drain, ours


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-n", type=int, default=5000)
    ap.add_argument("-r", type=int, default=5)
    args = ap.parse_args()
    from mcp_endpoint.transport import daphne_server

    daphne_server._install_eager_writes()
    for name in ("write (daphne's reply path)", "write_body"):
        best = float("inf")
        for _ in range(args.r):
            request, drain, sock = stream()
            connection = daphne_server.DaphneConnection({request: {}}, request)

            def old(body: bytes, write: Any = connection.write) -> None:
                write({"type": "http.response.body", "body": body, "more_body": True})

            write = connection.write_body if name == "write_body" else old
            time.sleep(0.2)
            started = time.perf_counter()
            for _ in range(args.n):
                write(FRAME)
            best = min(best, time.perf_counter() - started)
            sock.close()
            drain.wait(5)
        print(f"{name}: {best / args.n * 1e6:.2f} us per frame (best of {args.r} x {args.n})")


if __name__ == "__main__":
    main()
