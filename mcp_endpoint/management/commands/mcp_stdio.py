"""``python manage.py mcp_stdio [--client NAME]``: MCP over stdio.

One JSON-RPC message per line on stdin, one reply per line on stdout (protocol only), logs on
stderr, exit on EOF. Same dispatcher as HTTP; both wire generations (a line whose params carry
the 2026-07-28 ``_meta`` is served statelessly, everything else as one implicit legacy session).
"""

from __future__ import annotations

import asyncio
import logging
import sys

from django.core.management.base import BaseCommand, CommandError

from mcp_endpoint.dispatch.stdio import StdioState, handle_line, stdio_identity
from mcp_endpoint.wire import errors

logger = logging.getLogger("mcp_endpoint.stdio")


class Command(BaseCommand):
    help = "Serve MCP over stdin/stdout (one JSON-RPC message per line)."

    def add_arguments(self, parser):
        parser.add_argument("--client", default=None,
                            help="Registry client name whose label and scope to serve (default: anonymous).")

    def handle(self, *args, client=None, **options):
        logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
        try:
            identity = stdio_identity(client)
        except errors.McpError as exc:
            raise CommandError(exc.message) from exc
        asyncio.run(serve(sys.stdin.buffer, sys.stdout.buffer, StdioState(identity=identity)))


async def serve(stdin, stdout, state: StdioState) -> None:
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


async def _serve_lines(stdin, stdout, state: StdioState, loop) -> None:
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
