"""ASGI routing: exactly ``/mcp`` goes to the MCP transport, everything else to Django.

A tiny raw router instead of ProtocolTypeRouter/URLRouter: one string comparison per request
and no extra scope copying on the hot path.

``on_start``: work for a serving process (the GC tuning, config/gc_tuning.py), run once when the
server starts serving rather than when config/asgi.py is imported (a test, a script): at the
lifespan start-up under uvicorn, at the first connection under daphne, which sends no lifespan
events. Here, not in a layer of its own: every open stream keeps its layers' frames alive.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .transport.consumers import McpHttpApp

MCP_PATH = "/mcp"


def build_application(django_app: Any, *, path: str = MCP_PATH,
                      on_start: Sequence[Callable[[], None]] = ()) -> Any:
    mcp_app = McpHttpApp()
    pending = list(on_start)

    async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if pending:
            hooks = pending[:]
            pending.clear()
            for hook in hooks:
                hook()
        kind = scope["type"]
        if kind == "http":
            request_path = scope["path"]
            root = scope.get("root_path") or ""
            if root and request_path.startswith(root):
                request_path = request_path[len(root):]
            if request_path == path:
                await mcp_app(scope, receive, send)
                return
            await django_app(scope, receive, send)
        elif kind == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        elif kind == "websocket":
            await receive()
            await send({"type": "websocket.close", "code": 1000})
        else:
            raise ValueError(f"Unsupported ASGI scope type {kind!r}")

    application.mcp_app = mcp_app  # type: ignore[attr-defined]
    return application
