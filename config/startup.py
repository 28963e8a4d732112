"""Work that belongs to a serving process, done when the server starts serving, not at import.

Importing ``config.asgi`` (a test, a management command, a script) must not change the
importing process: the garbage-collector tuning of a server (config/gc_tuning.py) freezes every
object that exists and makes older collections rare, which a test run or a one-off script does
not want. :class:`AtServerStart` runs such hooks once, on the first call the server makes into
the application: the ASGI ``lifespan`` start-up under uvicorn (and any server that speaks the
lifespan protocol), the first connection under daphne, which sends no lifespan events. Either
way, the application and everything imported for it is built by then.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence


class AtServerStart:
    """ASGI wrapper: ``hooks`` run once, before the server's first call reaches ``app``."""

    def __init__(self, app: Any, hooks: Sequence[Callable[[], None]]) -> None:
        self.app = app
        self.hooks = list(hooks)
        self.started = False

    def __getattr__(self, name: str) -> Any:
        # The wrapped application's own attributes (the router's mcp_app, ...) stay reachable.
        if name in ("app", "hooks", "started"):
            raise AttributeError(name)
        return getattr(self.app, name)

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        for hook in self.hooks:
            hook()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if not self.started:
            self.start()
        await self.app(scope, receive, send)
