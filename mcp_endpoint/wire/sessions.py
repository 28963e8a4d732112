"""Legacy session ids and per-session state.

Sessions live in the database (``McpSession``) so that every worker process sees them. Each
process keeps a small LRU of recently used sessions and trusts an entry for
``SESSION_CACHE_SECONDS``; after that the row is re-read (one query per session per interval,
never per request), so a DELETE served by another process takes effect within that window.
"""

from __future__ import annotations

import functools
import ipaddress
import secrets
import time
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.utils import timezone

from ..models import McpSession
from ..settings import mcp_settings, on_reload
from . import errors, jsonrpc

LOG_LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_TOUCH_EVERY = 60.0  # seconds between last_seen writes for a busy session


def new_session_id() -> str:
    """128 bits from the OS CSPRNG, hex: visible ASCII (0x21-0x7E) only."""
    return secrets.token_hex(16)


def well_formed(session_id: str) -> bool:
    return 0 < len(session_id) <= 64 and all(0x21 <= ord(c) <= 0x7E for c in session_id)


def peer_key(client: Any) -> str:
    """ASGI ``scope["client"]`` -> the network an anonymous caller's sessions are counted under:
    the IPv4 address, or the IPv6 /64 (one host is usually handed a whole /64, so counting single
    IPv6 addresses would bound nothing). Behind a proxy run the server with --proxy-headers so
    this is the caller's address, not the proxy's."""
    host = client[0] if isinstance(client, (list, tuple)) and client else None
    if not isinstance(host, str) or not host:
        return "unknown"
    return _network_of(host)


@functools.lru_cache(maxsize=4096)
def _network_of(host: str) -> str:
    """peer_key of one address string, parsed once: a keep-alive client sends many requests
    from one address, and parsing it was ~5% of an anonymous read (bench/profile_reads.py)."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return host[:64]  # a Unix socket path or a name
    if isinstance(address, ipaddress.IPv6Address):
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def check_client_metadata(client_info: dict[str, Any], capabilities: dict[str, Any]) -> None:
    """Refuse an ``initialize`` whose clientInfo or capabilities exceed MAX_CLIENT_INFO_BYTES:
    both are stored with the session and clientInfo is cached in every process that serves it."""
    limit = int(mcp_settings.MAX_CLIENT_INFO_BYTES)
    for name, value in (("clientInfo", client_info), ("capabilities", capabilities)):
        try:
            size = len(jsonrpc.dumps(value))
        except (TypeError, ValueError, RecursionError):  # orjson stops at 254 levels of nesting
            raise errors.InvalidParams(f"Invalid params: {name} is nested too deeply",
                                       data={"field": name}) from None
        if size > limit:
            raise errors.InvalidParams(f"Invalid params: {name} is {size:,} bytes as JSON; at most {limit:,} "
                                       "are accepted", data={"field": name, "bytes": size, "limit": limit})


@dataclass
class Session:
    session_id: str
    protocol_version: str
    client_id: int | None = None
    client_info: dict[str, Any] = field(default_factory=dict)
    subscriptions: set[str] = field(default_factory=set)
    log_level: str = "info"
    checked_at: float = 0.0   # time.monotonic() of the last database confirmation
    touched_at: float = 0.0   # time.monotonic() of the last last_seen write
    persistent: bool = True   # False: in-memory only (stdio's implicit session)


class SessionStore:
    def __init__(self) -> None:
        self._cache: OrderedDict[str, Session] = OrderedDict()

    def clear_cache(self) -> None:
        self._cache.clear()

    def _remember(self, session: Session) -> None:
        self._cache[session.session_id] = session
        self._cache.move_to_end(session.session_id)
        while len(self._cache) > mcp_settings.SESSION_CACHE_SIZE:
            self._cache.popitem(last=False)

    async def create(self, *, protocol_version: str, client_info: dict[str, Any] | None,
                     client_capabilities: dict[str, Any] | None, client_id: int | None,
                     peer: str = "") -> Session:
        """Open a session for a client (``peer``: the anonymous caller's network, see peer_key).

        Raises errors.InvalidParams for oversized clientInfo/capabilities. A client (one token, or
        one anonymous network) holding MAX_SESSIONS_PER_CLIENT live sessions has its least
        recently used one ended to make room, and so do all anonymous callers together past
        MAX_ANONYMOUS_SESSIONS: clients that never send DELETE keep working (an ended session is
        a 404, and the client initializes again, as the transport specifies), while a flood only
        ever costs the flooder's own sessions and the table stays bounded."""
        check_client_metadata(client_info or {}, client_capabilities or {})
        sid = new_session_id()
        ended = await _db_create(sid, protocol_version, client_info or {}, client_capabilities or {}, client_id,
                                 peer if client_id is None else "")
        for old in ended:
            self._cache.pop(old, None)
        now = time.monotonic()
        session = Session(sid, protocol_version, client_id, client_info or {}, set(), "info", now, now)
        self._remember(session)
        return session

    async def get(self, session_id: str, *, fresh: bool = False) -> Session | None:
        """The live session, or None when unknown, ended or expired.

        ``fresh`` re-reads the row even inside the cache window: a GET stream copies the
        session's subscriptions when it opens, and another worker may have changed them since
        this process cached the session."""
        if not well_formed(session_id):
            return None
        now = time.monotonic()
        cached = self._cache.get(session_id)
        if not fresh and cached is not None and now - cached.checked_at < mcp_settings.SESSION_CACHE_SECONDS:
            return cached
        touch = cached is None or now - cached.touched_at >= _TOUCH_EVERY
        row = await _db_load(session_id, touch)
        if row is None:
            self._cache.pop(session_id, None)
            return None
        session = Session(
            session_id, row["protocol_version"], row["client_id"], row["client_info"] or {},
            set(row["subscriptions"] or ()), row["log_level"], now,
            now if touch else (cached.touched_at if cached else now),
        )
        self._remember(session)
        return session

    async def end(self, session_id: str) -> bool:
        """End a live session; False when it was unknown or already ended."""
        self._cache.pop(session_id, None)
        if not well_formed(session_id):
            return False
        return await _db_end(session_id)

    async def set_subscription(self, session: Session, uri: str, subscribed: bool) -> None:
        """Add or remove one subscription. A stored session is changed in the row, not from this
        process's cached copy, which may predate a (un)subscribe served by another worker."""
        if session.persistent:
            stored = await _db_change_subscription(session.session_id, uri, subscribed)
            if stored is not None:
                session.subscriptions.clear()  # in place: listeners may hold this set
                session.subscriptions.update(stored)
                return
        if subscribed:
            session.subscriptions.add(uri)
        else:
            session.subscriptions.discard(uri)

    async def set_log_level(self, session: Session, level: str) -> None:
        session.log_level = level
        if session.persistent:
            await _db_update(session.session_id, log_level=level)


def _cutoff():
    return timezone.now() - timedelta(seconds=mcp_settings.SESSION_IDLE_SECONDS)


def _end_least_recently_used(live: Any, keep: int) -> list[str]:
    """End all but the ``keep`` most recently used sessions of ``live``; their ids."""
    excess = live.count() - max(keep, 0)
    if excess <= 0:
        return []
    ids = list(live.order_by("last_seen", "created").values_list("pk", flat=True)[:excess])
    McpSession.objects.filter(pk__in=ids).update(ended=True, last_seen=timezone.now())
    return ids


@database_sync_to_async
def _db_create(sid: str, version: str, info: dict, caps: dict, client_id: int | None, peer: str) -> list[str]:
    """Make room within the session limits, then store the new session; the ids ended for room."""
    from django.db import transaction

    per_client = int(mcp_settings.MAX_SESSIONS_PER_CLIENT)
    with transaction.atomic():
        live = McpSession.objects.filter(ended=False, last_seen__gte=_cutoff(), client_id=client_id)
        ended = _end_least_recently_used(live if client_id is not None else live.filter(peer=peer), per_client - 1)
        if client_id is None:
            ended += _end_least_recently_used(live, int(mcp_settings.MAX_ANONYMOUS_SESSIONS) - 1)
        McpSession.objects.create(session_id=sid, protocol_version=version, client_info=info,
                                  client_capabilities=caps, client_id=client_id, peer=peer)
    return ended


@database_sync_to_async
def _db_load(sid: str, touch: bool) -> Mapping[str, Any] | None:
    row = (McpSession.objects.filter(pk=sid, ended=False, last_seen__gte=_cutoff())
           .values("protocol_version", "client_id", "client_info", "subscriptions", "log_level").first())
    if row is not None and touch:
        McpSession.objects.filter(pk=sid).update(last_seen=timezone.now())
    return row


@database_sync_to_async
def _db_end(sid: str) -> bool:
    # last_seen doubles as the end time, so prune() keeps ended rows for a while (late requests: 404).
    return McpSession.objects.filter(pk=sid, ended=False).update(ended=True, last_seen=timezone.now()) > 0


@database_sync_to_async
def _db_change_subscription(sid: str, uri: str, subscribed: bool) -> list[str] | None:
    """Read-modify-write of one session's subscriptions under a row lock (SQLite: the
    IMMEDIATE transaction's write lock); the stored list afterwards, or None without a row."""
    from django.db import transaction

    with transaction.atomic():
        row = McpSession.objects.select_for_update().filter(pk=sid).values("subscriptions").first()
        if row is None:
            return None
        subscriptions = set(row["subscriptions"] or ())
        if subscribed:
            subscriptions.add(uri)
        else:
            subscriptions.discard(uri)
        stored = sorted(subscriptions)
        McpSession.objects.filter(pk=sid).update(subscriptions=stored)
    return stored


@database_sync_to_async
def _db_update(sid: str, **fields: Any) -> None:
    McpSession.objects.filter(pk=sid).update(**fields)


store = SessionStore()
on_reload(store.clear_cache)


def stored_subscriptions(session_ids: list[str]) -> dict[str, list[str]]:
    """The stored subscriptions of these sessions, by session id (sync: queries, 500 ids at a time).

    The hub re-reads its legacy GET streams' subscriptions before every delivery, so a
    ``resources/subscribe`` served by another worker counts even while the channel layer is down."""
    out: dict[str, list[str]] = {}
    for start in range(0, len(session_ids), 500):
        rows = McpSession.objects.filter(pk__in=session_ids[start:start + 500])
        out.update((pk, list(subs or ())) for pk, subs in rows.values_list("pk", "subscriptions"))
    return out


def prune(*, keep_ended_seconds: float = 3600.0) -> int:
    """Delete rows of sessions that are expired, or ended more than ``keep_ended_seconds`` ago
    (sync; for a periodic job). Returns the number of rows deleted."""
    from django.db.models import Q

    now = timezone.now()
    idle_cutoff = now - timedelta(seconds=mcp_settings.SESSION_IDLE_SECONDS)
    ended_cutoff = now - timedelta(seconds=keep_ended_seconds)
    deleted, _ = McpSession.objects.filter(
        Q(last_seen__lt=idle_cutoff) | Q(ended=True, last_seen__lt=ended_cutoff)).delete()
    return deleted
