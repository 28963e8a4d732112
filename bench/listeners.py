#!/usr/bin/env python3
"""K open `subscriptions/listen` streams (2026-07-28) held by a separate process, for the benches.

Opens K streams to http://127.0.0.1:PORT/mcp, waits for every acknowledgement, prints one JSON
line {"ready": K} and then drains them. Every notification frame's receipt time (wall clock,
the same machine clock the server writes into its commit timestamp) is kept; on SIGTERM or when
stdin closes it prints {"frames": [...]} with, per notification, the receipt time of the first
and of the LAST listener, and exits. Run from the benches, not by hand:

  python bench/listeners.py --port 8000 -k 1000 [--uri docs://doc-00001]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time


def request(port: int, uri: str) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen", "params": {
        "notifications": {"promptsListChanged": True, "resourcesListChanged": True, "resourceSubscriptions": [uri]},
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
    args = ap.parse_args()
    payload = request(args.port, args.uri)
    # receipts[i] = receipt times (wall clock) of the i-th notification on each stream
    receipts: list[list[float]] = []

    async def one() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        reader, writer = await asyncio.open_connection("127.0.0.1", args.port)
        writer.write(payload)
        data = b""
        while b"acknowledged" not in data:
            chunk = await reader.read(65536)
            if not chunk:
                raise RuntimeError("listen stream closed before its acknowledgement")
            data += chunk
        return reader, writer

    async def drain(reader: asyncio.StreamReader) -> None:
        seen = 0
        while True:
            chunk = await reader.read(65536)
            if not chunk:
                return
            now = time.time()
            for _ in range(chunk.count(b"notifications/")):
                if seen >= len(receipts):
                    receipts.append([])
                receipts[seen].append(now)
                seen += 1

    streams = []
    for start in range(0, args.k, 100):
        streams += await asyncio.gather(*(one() for _ in range(start, min(args.k, start + 100))))
    tasks = [asyncio.create_task(drain(reader)) for reader, _writer in streams]
    print(json.dumps({"ready": len(streams)}), flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_reader(sys.stdin.fileno(), lambda: None if sys.stdin.readline() else stop.set())
    await stop.wait()
    for task in tasks:
        task.cancel()
    for _reader, writer in streams:
        writer.close()
    print(json.dumps({"frames": [{"first": min(r), "last": max(r), "count": len(r)} for r in receipts]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
