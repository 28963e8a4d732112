"""``python manage.py mcp_stdio [--client NAME]``: MCP over stdio.

One JSON-RPC message per line on stdin, one reply per line on stdout (protocol only), logs on
stderr, exit on EOF (mcp_endpoint/transport/stdio.py). Same dispatch as HTTP; both wire
generations (a line whose params carry the 2026-07-28 ``_meta`` is served statelessly,
everything else as one implicit legacy session: mcp_endpoint/dispatch/stdio.py).
"""

from __future__ import annotations

import asyncio
import logging
import sys

from django.core.management.base import BaseCommand, CommandError

from mcp_endpoint.dispatch.stdio import StdioState, stdio_identity
from mcp_endpoint.transport.stdio import serve
from mcp_endpoint.wire import errors


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
