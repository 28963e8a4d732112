#!/usr/bin/env python3
"""K open `subscriptions/listen` streams (2026-07-28) held by a separate process, for the benches.

Opens K streams to http://127.0.0.1:PORT/mcp, waits for every acknowledgement, prints one JSON
line {"ready": K} and then drains them. Every notification frame's receipt time (wall clock,
the same machine clock the server writes into its commit timestamp) is kept; on SIGTERM or when
stdin closes it prints {"frames": [...]} with, per notification, the receipt time of the first
and of the LAST listener, and exits. Run from the benches, not by hand:

  python bench/listeners.py --port 8000 -k 1000 [--uri docs://doc-00001] [--sources 5]

--uris A,B,... subscribes each stream to several URIs, and --by-uri reports instead, per stream,
the receipt times of every `notifications/resources/updated` by its URI ({"streams": [{uri:
[times]}]}), so a bench can tell which change reached which listener (bench/lost.py).

Anonymous streams are limited per peer address (MAX_STREAMS_PER_CLIENT, 2,000), so --sources N
spreads the connections over the local addresses 127.0.0.1 .. 127.0.0.N. The soft open-files
limit is raised to the hard one (each stream is a socket).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import signal
import sys
import time

UPDATED = "notifications/resources/updated"


def request(port: int, uris: list[str]) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"promptsListChanged": True, "resourcesListChanged": True,
                          "resourceSubscriptions": uris},
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: subscriptions/listen\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return head + body


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("-k", type=int, default=1000)
    ap.add_argument("--uri", default="docs://doc-00001")
    ap.add_argument("--uris", default="", help="comma-separated URIs to subscribe to (instead of --uri)")
    ap.add_argument("--by-uri", action="store_true",
                    help="report each stream's resources/updated receipts by URI")
    ap.add_argument("--sources", type=int, default=1, help="local addresses 127.0.0.1..N to connect from")
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and (hard == resource.RLIM_INFINITY or soft < hard):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    opened = 0
    payload = request(args.port, [u for u in args.uris.split(",") if u] or [args.uri])
    # receipts[i] = receipt times (wall clock) of the i-th notification on each stream
    receipts: list[list[float]] = []

    loop = asyncio.get_running_loop()

    class ListenStream(asyncio.Protocol):
        """One stream, read by a bare protocol callback (no task or StreamReader per stream), so
        this process's own cost per frame stays small next to the server's."""

        def __init__(self) -> None:
            self.acknowledged = loop.create_future()
            self.head = b""
            self.seen = 0
            self.transport: asyncio.Transport | None = None
            self.chunked = False
            self.raw = b""  # --by-uri: bytes not yet de-chunked
            self.body = b""  # --by-uri: de-chunked SSE text not yet split into events
            self.updated: dict[str, list[float]] = {}  # --by-uri: URI -> receipt times

        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            self.transport = transport  # type: ignore[assignment]
            transport.write(payload)  # type: ignore[attr-defined]

        def data_received(self, data: bytes) -> None:
            now = time.time()
            if not self.acknowledged.done():
                self.head += data
                if b"acknowledged" not in self.head:
                    return
                head, _, body = self.head.partition(b"\r\n\r\n")
                self.chunked = b"transfer-encoding: chunked" in head.lower()
                data = self.head.split(b"acknowledged", 1)[1]
                self.acknowledged.set_result(None)
                if args.by_uri:  # the acknowledgement's own event is skipped: it names no update
                    self.raw = body
                    self.events(now)
                    return
            if args.by_uri:
                self.raw += data
                self.events(now)
                return
            for _ in range(data.count(b"notifications/")):
                if self.seen >= len(receipts):
                    receipts.append([])
                receipts[self.seen].append(now)
                self.seen += 1

        def events(self, now: float) -> None:
            """De-chunk what arrived, then record every complete SSE event naming an updated URI."""
            if not self.chunked:
                self.body += self.raw
                self.raw = b""
            while self.chunked:
                size_end = self.raw.find(b"\r\n")
                if size_end < 0:
                    break
                size = int(self.raw[:size_end].split(b";")[0] or b"0", 16)
                if len(self.raw) < size_end + 2 + size + 2:
                    break
                self.body += self.raw[size_end + 2:size_end + 2 + size]
                self.raw = self.raw[size_end + 2 + size + 2:]
            *blocks, self.body = self.body.replace(b"\r\n", b"\n").split(b"\n\n")
            for block in blocks:
                data = b"".join(line[5:].strip() for line in block.split(b"\n") if line.startswith(b"data:"))
                if UPDATED.encode() not in data:
                    continue
                message = json.loads(data)
                if message.get("method") == UPDATED:
                    self.updated.setdefault(message["params"]["uri"], []).append(now)

        def connection_lost(self, exc: Exception | None) -> None:
            if not self.acknowledged.done():
                self.acknowledged.set_exception(RuntimeError("listen stream closed before its acknowledgement"))

    async def one() -> ListenStream:
        nonlocal opened
        source = f"127.0.0.{1 + opened % max(1, args.sources)}"
        opened += 1
        _transport, stream = await loop.create_connection(ListenStream, "127.0.0.1", args.port,
                                                          local_addr=(source, 0))
        await stream.acknowledged
        return stream

    streams: list[ListenStream] = []
    for start in range(0, args.k, 100):
        streams += await asyncio.gather(*(one() for _ in range(start, min(args.k, start + 100))))
    print(json.dumps({"ready": len(streams)}), flush=True)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_reader(sys.stdin.fileno(), lambda: None if sys.stdin.readline() else stop.set())
    await stop.wait()
    for stream in streams:
        if stream.transport is not None:
            stream.transport.close()
    if args.by_uri:
        print(json.dumps({"streams": [stream.updated for stream in streams]}), flush=True)
        return
    print(json.dumps({"frames": [{"first": min(r), "last": max(r), "count": len(r)} for r in receipts]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
