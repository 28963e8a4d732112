"""What reaches the hub from outside this process, and the loops that bring it.

Changes committed by other processes arrive two ways, and the hub handles each change-log id
once whichever comes first:
  * over the channel layer (Redis when scaled out): :func:`read_layer`, with :func:`watch_layer`
    logging an outage's start, summary and end (notify/layer_health.py);
  * from the change log itself, every CHANGE_POLL_SECONDS: :func:`poll_forever` runs
    :func:`catch_up`, which asks for every id the process has not applied (notify/applied.py: ids
    are not commit order), gives up on gaps past the bound and has the hub check its catalogs
    when that is due. It works with no channel layer at all (a management command on the
    embedded default) and while Redis is down.
Changes this process commits come in through notify/handoff.py. These loops are started by
``Hub.start`` and take the hub they feed as their first argument.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from ..settings import mcp_settings
from . import layer_health
from .reads import Change, changes_wanted, prune_change_log

log = logging.getLogger(__name__)


def changes_group() -> str:
    """The channel-layer group of this registry's change events.

    Named after the database, so two registries sharing one Redis never take each other's
    change ids for their own (which would mark a real change as already seen).
    """
    db = settings.DATABASES["default"]
    identity = "|".join(str(db.get(k, "")) for k in ("ENGINE", "NAME", "HOST", "PORT"))
    return "mcp.registry-changes." + hashlib.sha256(identity.encode()).hexdigest()[:20]


def channel_layer() -> Any:
    try:
        from channels.layers import get_channel_layer

        return get_channel_layer()
    except Exception:
        log.exception("channel layer misconfigured")
        return None


def in_memory(layer: Any) -> bool:
    from channels.layers import InMemoryChannelLayer

    return isinstance(layer, InMemoryChannelLayer)



async def catch_up(hub: Any) -> None:
    """One catch-up tick: read what this process has not applied, deliver it, give up on
    gaps older than the bound, and check the catalogs when that is due (or in doubt)."""
    # Everything after the newest id applied, plus every id still missing below it:
    # a long transaction commits its low ids after shorter ones with higher ids.
    rows = await database_sync_to_async(changes_wanted)(hub.ids.top, sorted(hub.ids.gaps))
    missed = [c for c in rows if hub.ids.is_new(c.id)]
    if missed:
        await hub.process(missed)
    given_up = hub.ids.expire(float(mcp_settings.CHANGE_GAP_SECONDS))
    now = time.monotonic()
    if given_up:  # a rolled-back id, or a transaction open for longer than the bound
        log.info("change-log ids %s never committed within %s s; checking the catalogs",
                 given_up[:10], mcp_settings.CHANGE_GAP_SECONDS)
    doubt = hub.ids.take_doubt()
    if given_up or doubt or now - hub.last_check > float(mcp_settings.CONSISTENCY_CHECK_SECONDS):
        hub.last_check = now
        await hub.check_consistency()


async def poll_forever(hub: Any) -> None:
    interval = float(mcp_settings.CHANGE_POLL_SECONDS)
    last_prune = hub.last_check = time.monotonic()
    failing_since: float | None = None
    last_report = 0.0
    while True:
        await asyncio.sleep(interval)
        try:
            await catch_up(hub)
            if time.monotonic() - last_prune > 600:
                last_prune = time.monotonic()
                await database_sync_to_async(prune_change_log)()
        except asyncio.CancelledError:
            raise
        except Exception:  # the database may be briefly unavailable; try again next tick
            now = time.monotonic()
            if failing_since is None:
                failing_since = last_report = now
                log.warning("change-log catch-up failed; retrying every %s s", interval, exc_info=True)
            elif now - last_report >= 30:
                last_report = now
                log.warning("change-log catch-up still failing after %d s", now - failing_since)
        else:
            if failing_since is not None:
                log.warning("change-log catch-up works again after %d s", time.monotonic() - failing_since)
            failing_since = None


async def read_layer(hub: Any, layer: Any) -> None:
    while True:
        try:
            channel = await layer.new_channel("mcp.hub!")
            await layer.group_add(changes_group(), channel)
            while True:
                event = await layer.receive(channel)
                if event.get("type") == "registry.changed":
                    await hub.process([Change(*row) for row in event["changes"]])
        except asyncio.CancelledError:
            raise
        except Exception:  # Redis down: the poller keeps changes flowing; reconnect shortly
            layer_health.health.failure(log, "channel layer unavailable")
            await asyncio.sleep(1.0)


async def watch_layer(layer: Any) -> None:
    """Probe the layer (one publish nobody listens to) to log an outage's start, a summary
    while it lasts and its end: one line each, not a traceback per second."""
    probe = changes_group() + ".probe"
    while True:
        try:
            await asyncio.wait_for(layer.group_send(probe, {"type": "mcp.probe"}), 5.0)
        except asyncio.CancelledError:
            raise
        except Exception:
            layer_health.health.probe_failed()
        else:
            layer_health.health.probe_ok()
        await asyncio.sleep(1.0 if layer_health.health.down else 5.0)

