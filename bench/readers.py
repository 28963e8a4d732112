#!/usr/bin/env python3
"""R clients looping the three list methods (2026-07-28), held by a separate process, for the benches.

Each client keeps one HTTP/1.1 connection to http://127.0.0.1:PORT/mcp (or, with several
--port, to each port in turn) and loops prompts/list, resources/list, resources/templates/list
(first page) back to back, each reply checked for its list. A list request after a change,
before the process has refreshed its catalog, reads the database and starts a full catalog
rebuild (registry/serving/warmup.py), which is the traffic that raced the hub's deliveries
(bench/lost.py). The shared load generator (../shared/bench/mcp_load.py) has no resources/list,
hence this. Prints one JSON line {"ready": R} once every connection is open, then loops; on
SIGTERM or when stdin closes it prints {"requests": n, "errors": e, "per_method": {...},
"seconds": s, "error_samples": [...]} and exits. Run from the benches, not by hand:

  python bench/readers.py --port 8000 [--port 8001] -r 16
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from collections import Counter

METHODS = (("prompts/list", "prompts"), ("resources/list", "resources"),
           ("resources/templates/list", "resourceTemplates"))


def request(port: int, method: str, rid: int) -> bytes:
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {
        "_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                  "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n"
            f"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            f"Mcp-Method: {method}\r\nContent-Length: {len(body)}\r\n\r\n").encode()
    return head + body


async def reply(reader: asyncio.StreamReader) -> tuple[int, bytes]:
    """(status, body) of one response: Content-Length or chunked."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    headers = head.lower()
    if b"transfer-encoding: chunked" in headers:
        body = b""
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            chunk = await reader.readexactly(size + 2)
            if size == 0:
                return status, body
            body += chunk[:-2]
    length = int(headers.split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
    return status, await reader.readexactly(length)


def checked(method: str, field: str, status: int, body: bytes) -> str | None:
    """None if the reply is a list result, else what was wrong."""
    if status != 200:
        return f"{method}: HTTP {status} {body[:200]!r}"
    if body.startswith(b"event:") or body.startswith(b"data:"):  # one SSE event
        body = b"".join(line[5:] for line in body.split(b"\n") if line.startswith(b"data:"))
    message = json.loads(body)
    if not isinstance(message.get("result", {}).get(field), list):
        return f"{method}: {str(message)[:200]}"
    return None


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, action="append", required=True,
                    help="repeat to spread the clients over workers")
    ap.add_argument("-r", type=int, default=16, help="concurrent clients")
    args = ap.parse_args()
    done: Counter[str] = Counter()
    errors: list[str] = []
    stop = asyncio.Event()

    async def client(index: int, ready: asyncio.Future[None]) -> None:
        port = args.port[index % len(args.port)]
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError as exc:
            ready.set_exception(exc)
            return
        ready.set_result(None)
        rid = 0
        while not stop.is_set():
            method, field = METHODS[(index + rid) % len(METHODS)]
            rid += 1
            writer.write(request(port, method, rid))
            try:
                status, body = await reply(reader)
                problem = checked(method, field, status, body)
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                problem = f"{method}: {exc!r}"
                writer.close()
                reader, writer = await asyncio.open_connection("127.0.0.1", port)
            done[method] += 1
            if problem is not None:
                errors.append(problem)
        writer.close()

    loop = asyncio.get_running_loop()
    readies = [loop.create_future() for _ in range(args.r)]
    tasks = [asyncio.create_task(client(i, ready)) for i, ready in enumerate(readies)]
    if readies:
        await asyncio.gather(*readies)
    started = time.monotonic()
    print(json.dumps({"ready": args.r}), flush=True)
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_reader(sys.stdin.fileno(), lambda: None if sys.stdin.readline() else stop.set())
    await stop.wait()
    seconds = time.monotonic() - started
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps({"requests": sum(done.values()), "errors": len(errors), "per_method": dict(done),
                      "seconds": round(seconds, 1), "error_samples": errors[:5]}), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
