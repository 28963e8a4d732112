"""Streams end within a second when the credentials they were opened with change, in every process.

A long-lived stream (a 2026-07-28 listen, a legacy GET stream) keeps the identity it was opened
with and re-checks it (``still_authorised``, handlers/identity.py) at every keep-alive tick. A
revocation must not wait for that tick (15 s by default), nor for a token's expiry (up to an hour): revoking a
client, deleting an OAuth token or connection, deactivating a user, re-labelling or re-scoping a
client, giving it a new token (``registry.signals.credentials_changed``) makes the streams that
depend on it re-check at once.

How the news travels:
  1. the changing transaction records a ``CredentialChange`` row (durable, like the change log);
  2. after commit, the committing process drops its cached token answers and wakes its own
     affected streams at once;
  3. every other process holding streams reads new rows every ``CHANGE_POLL_SECONDS`` (0.5 s),
     drops its cached answers and wakes its affected streams. The database is the carrier, so
     it works with Redis down as with Redis up, and on the embedded default with a change made
     by ``manage.py shell``. A row committed out of id order is still read (a look-back window
     below the newest id), and rows are pruned after an hour.

A woken stream runs its usual re-check; if the credentials no longer serve it, it ends without a
result (transport/stream_loop.py), so the client reconnects and meets the current answer.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from channels.db import database_sync_to_async

from ..settings import mcp_settings
from .reads import forget_cached_tokens

log = logging.getLogger(__name__)

LOOKBACK = 1000  # ids below the newest read that a transaction committing late may still fill
STARTUP_WINDOW_SECONDS = 60.0  # rows this recent when a process starts polling are still news
PRUNE_SECONDS = 3600.0
PRUNE_EVERY_SECONDS = 600.0

Credentials = tuple[Any, str]  # (McpClient id or None, OAuth access token checksum or "")


class Revocations:
    """The streams of this process by the credentials they depend on, and the poller that
    tells them of changes committed anywhere."""

    def __init__(self) -> None:
        self.watchers: dict[tuple[str, Any], set[tuple[asyncio.AbstractEventLoop, Callable[[], None]]]] = \
            defaultdict(set)
        self.lock = threading.Lock()
        self.loop: asyncio.AbstractEventLoop | None = None
        self.task: asyncio.Task | None = None
        self.top: int | None = None  # the newest row id read (None: not read yet)
        self.seen: set[int] = set()

    # ---------------------------------------------------------------- streams
    def watch(self, credentials: Credentials | None, recheck: Callable[[], None]) -> Callable[[], None]:
        """Call ``recheck`` (in this loop) whenever ``credentials`` may have changed; returns the
        function that stops watching. Call from the stream's event loop."""
        keys = _keys(credentials)
        if not keys:
            return lambda: None
        entry = (asyncio.get_running_loop(), recheck)
        with self.lock:
            for key in keys:
                self.watchers[key].add(entry)
        self._ensure_polling()

        def unwatch() -> None:
            with self.lock:
                for key in keys:
                    entries = self.watchers.get(key)
                    if entries is not None:
                        entries.discard(entry)
                        if not entries:
                            del self.watchers[key]

        return unwatch

    def changed(self, client_ids: Iterable[Any], token_checksums: Iterable[str]) -> int:
        """Credentials changed (from any thread): forget the cached answers, wake the streams
        that depend on them. Returns how many streams were asked to re-check."""
        forget_cached_credentials()
        keys = [("client", c) for c in client_ids] + [("token", t) for t in token_checksums if t]
        with self.lock:
            entries = {entry for key in keys for entry in self.watchers.get(key, ())}
        for loop, recheck in entries:
            if loop.is_closed():
                continue
            if _running_loop() is loop:
                recheck()
            else:
                loop.call_soon_threadsafe(recheck)
        return len(entries)

    def committed(self, row_id: int, client_ids: list[Any], token_checksums: list[str]) -> None:
        """This process committed row ``row_id``: act now; the poller need not act again."""
        with self.lock:
            self.seen.add(row_id)
        self.changed(client_ids, token_checksums)

    # ---------------------------------------------------------------- polling
    def _ensure_polling(self) -> None:
        loop = asyncio.get_running_loop()
        if self.loop is loop and self.task is not None and not self.task.done():
            return
        self.loop = loop
        self.task = loop.create_task(self._poll_forever(), name="mcp-credential-changes",
                                     context=contextvars.Context())

    async def _poll_forever(self) -> None:
        failing_since: float | None = None
        last_prune = time.monotonic()
        while True:
            await asyncio.sleep(float(mcp_settings.CHANGE_POLL_SECONDS))
            if not self.watchers:
                continue  # no stream to re-check: no query
            try:
                rows = await database_sync_to_async(_rows_after)(self.top)
                if time.monotonic() - last_prune > PRUNE_EVERY_SECONDS:
                    last_prune = time.monotonic()
                    await database_sync_to_async(prune)()
            except asyncio.CancelledError:
                raise
            except Exception:  # e.g. the database is down: streams keep their keep-alive re-checks
                now = time.monotonic()
                if failing_since is None or now - failing_since > 60:
                    failing_since = now
                    log.warning("reading credential changes failed; retrying every %s s",
                                mcp_settings.CHANGE_POLL_SECONDS, exc_info=True)
                continue
            failing_since = None
            self.poll_applied(rows)

    def poll_applied(self, rows: list[tuple[int, list[Any], list[str]]]) -> None:
        """Act on rows read from the database (those this process has not acted on)."""
        fresh_clients: set[Any] = set()
        fresh_tokens: set[str] = set()
        with self.lock:
            for row_id, client_ids, tokens in rows:
                if self.top is None or row_id not in self.seen:
                    fresh_clients.update(client_ids or ())
                    fresh_tokens.update(tokens or ())
                self.seen.add(row_id)
            newest = max((row_id for row_id, _c, _t in rows), default=self.top or 0)
            self.top = max(self.top or 0, newest)
            floor = self.top - LOOKBACK
            self.seen = {i for i in self.seen if i > floor}
        if fresh_clients or fresh_tokens:
            woken = self.changed(fresh_clients, fresh_tokens)
            log.info("credentials changed for clients %s and %d token(s): %d stream(s) re-checked",
                     sorted(fresh_clients, key=str), len(fresh_tokens), woken)


def _keys(credentials: Credentials | None) -> list[tuple[str, Any]]:
    if credentials is None:
        return []
    client_id, token = credentials
    keys: list[tuple[str, Any]] = []
    if client_id is not None:
        keys.append(("client", client_id))
    if token:
        keys.append(("token", token))
    return keys


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _rows_after(top: int | None) -> list[tuple[int, list[Any], list[str]]]:
    """Rows after the look-back floor below ``top``; when nothing was read yet, the last minute's."""
    from datetime import timedelta

    from django.utils import timezone

    from ..models import CredentialChange

    rows = CredentialChange.objects.order_by("id")
    if top is None:
        rows = rows.filter(created__gte=timezone.now() - timedelta(seconds=STARTUP_WINDOW_SECONDS))
    else:
        rows = rows.filter(id__gt=max(0, top - LOOKBACK))
    return [(r.id, r.client_ids, r.token_checksums) for r in rows[:5000]]


def prune() -> int:
    from datetime import timedelta

    from django.utils import timezone

    from ..models import CredentialChange

    cutoff = timezone.now() - timedelta(seconds=PRUNE_SECONDS)
    deleted, _ = CredentialChange.objects.filter(created__lt=cutoff).delete()
    return deleted


def forget_cached_credentials() -> None:
    """Drop this process's cached token and client answers, so a re-check reads the database."""
    forget_cached_tokens()
    try:
        from oauth import bearer
    except ImportError:  # the OAuth app is optional to the transport
        return
    bearer.forget_cached()


revocations = Revocations()


def record_credentials_change(sender: Any, client_ids: Iterable[Any] = (),
                              token_checksums: Iterable[str] = (), **kwargs: Any) -> None:
    """``registry.signals.credentials_changed`` receiver, inside the changing transaction: the
    durable row first, the local wake-up once it commits (a rolled-back change wakes nothing)."""
    from django.db import transaction

    from ..models import CredentialChange

    clients = sorted({c for c in client_ids if c is not None}, key=str)
    tokens = sorted({t for t in token_checksums if t})
    if not clients and not tokens:
        return
    row = CredentialChange.objects.create(client_ids=clients, token_checksums=tokens)
    transaction.on_commit(lambda: revocations.committed(row.pk, clients, tokens))
