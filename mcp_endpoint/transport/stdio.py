"""MCP over stdio: one JSON-RPC message per line on stdin, one reply per line on stdout (protocol
only), logs on stderr, exit on EOF. What a line means is dispatch/stdio.py's business."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, BinaryIO

from ..dispatch.stdio import StdioState, handle_line

logger = logging.getLogger(__name__)


async def serve(stdin: BinaryIO, stdout: BinaryIO, state: StdioState) -> None:
    """Read lines in a worker thread (stdin is blocking), answer in order, flush per reply.

    Notifications (legacy session, listen subscriptions) are written between replies, one
    message per line, from the same event loop, so lines never interleave."""
    loop = asyncio.get_running_loop()

    def send(line: bytes) -> None:
        stdout.write(line + b"\n")
        stdout.flush()

    state.send = send
    try:
        await _serve_lines(stdin, stdout, state, loop)
    finally:
        state.close()


async def _serve_lines(stdin: BinaryIO, stdout: BinaryIO, state: StdioState, loop: Any) -> None:
    while True:
        line = await loop.run_in_executor(None, stdin.readline)
        if not line:
            return  # EOF
        line = line.strip()
        if not line:
            continue
        try:
            reply = await handle_line(line, state)
        except Exception:
            logger.exception("stdio: failed to handle a message")
            continue
        if reply is not None:
            stdout.write(reply + b"\n")
            stdout.flush()
