"""Per-request protocol context handed from the dispatcher to handlers. Pure Python."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .shapes import finalize_modern


@dataclass(frozen=True, slots=True)
class Identity:
    """Who is asking: the registry viewer plus what the transport needs to know about it."""

    viewer: Any              # registry.serving.viewer.Viewer (opaque above handlers)
    client_id: int | None = None
    scoped: bool = False     # scoped clients see per-client lists -> cacheScope "private"
    label: str = "production"
    peer: str = ""           # anonymous callers: their network (sessions.peer_key), which bounds their sessions
    oauth_token: str = ""    # OAuth callers: their access token's checksum, re-checked by long-lived streams
    token_hash: str = ""     # pre-shared token callers: its hash, so a re-issued token ends the old one's streams

    @property
    def cache_key(self) -> tuple:
        v = self.viewer
        return (getattr(v, "label", self.label), tuple(sorted(getattr(v, "scope_tags", ()) or ())))


@dataclass(slots=True)
class RequestContext:
    version: str                              # negotiated / requested protocol revision
    modern: bool                              # 2026-07-28 stateless wire
    identity: Identity
    server_info: dict[str, Any]               # Implementation, already shaped for ``version``
    ttl_ms: int = 60_000
    session: Any = None                       # sessions.Session on the legacy wire
    client_capabilities: dict[str, Any] = field(default_factory=dict)

    @property
    def cache_scope(self) -> str:
        return "private" if self.identity.scoped else "public"

    @property
    def elicits_forms(self) -> bool:
        """2026-07-28 client that declared form elicitation (``elicitation: {}`` means form mode)."""
        elicitation = self.client_capabilities.get("elicitation") if self.modern else None
        return isinstance(elicitation, dict) and ("form" in elicitation or "url" not in elicitation)

    def input_required(self, input_requests: dict[str, Any]) -> dict[str, Any]:
        """A 2026-07-28 InputRequiredResult: never cacheable, so no ttlMs/cacheScope."""
        return finalize_modern({"inputRequests": input_requests}, self.server_info, result_type="input_required")

    def complete(self, result: dict[str, Any], *, cacheable: bool = False, private: bool = False,
                 ttl_ms: int | None = None, cache_scope: str | None = None) -> dict[str, Any]:
        """Add the 2026-07-28 result fields (``resultType``, serverInfo ``_meta``, and caching
        hints when ``cacheable``; ``private`` forces cacheScope private, e.g. for results
        personalised by a rollout); legacy results pass through untouched.

        ``ttl_ms`` and ``cache_scope`` are a result's own hints (a dynamic resource's): the ttl
        replaces the default, and a "private" scope narrows it; nothing widens a private result."""
        if not self.modern:
            return result
        scope = "private" if private or cache_scope == "private" else self.cache_scope
        ttl = self.ttl_ms if ttl_ms is None else ttl_ms
        return finalize_modern(result, self.server_info, cache=(ttl, scope) if cacheable else None)
