"""Changes this process commits: to its own hub once the committing request is answered, and to
every other process over the channel layer at once.

``forward_registry_changes`` is the ``registry_changed`` receiver (connected in
``McpEndpointConfig.ready``); it runs in the committing thread, after the commit.

The publishing request's thread commits and, in its on_commit callback, hands the change to
the hub. Fanning it out to thousands of streams takes the event loop tens of milliseconds, and
the request's own response still needs several trips through that same loop (and the GIL)
before its last byte is written; started at once, the fan-out would be paid by the publisher.
So during a request (between Django's `request_started` and `request_finished`, which
`response.close()` sends after the body was handed to the server) the hand-off is held back
and made when the request finishes.

The hub holds those ids meanwhile, so neither this process's own channel-layer event nor the
poller starts the fan-out early. Nothing is lost or doubled: the hub handles each change-log id
once however often it is offered, the hold ends after SAFETY_NET_SECONDS in any case (a
request cut short, with no `request_finished`), and other workers hear of the change over the
channel layer at once (that send never waited for the response).
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from typing import Any

from asgiref.sync import async_to_sync

from . import intake, layer_health
from .hub import hub
from .reads import Change, ChangeBatch

log = logging.getLogger(__name__)

SAFETY_NET_SECONDS = 0.25

# Per thread: a request's changes waiting for its end (None outside a request). Django runs a
# request's sync code (signals, view, response.close) in one thread, its own under ASGI.
_request = threading.local()


def request_started(sender: Any, **kwargs: Any) -> None:
    _request.deferred = []


def request_finished(sender: Any, **kwargs: Any) -> None:
    deferred, _request.deferred = getattr(_request, "deferred", None), None
    if deferred:
        for changes in deferred:
            hub.submit_threadsafe(changes, release=True)


def hand_to_hub(changes: list[Change]) -> None:
    """Offer committed changes to this process's hub: now, or at the end of the running request."""
    deferred = getattr(_request, "deferred", None)
    if deferred is None:
        hub.submit_threadsafe(changes)
        return
    deferred.append(changes)
    hub.hold_threadsafe(changes, SAFETY_NET_SECONDS)


def forward_registry_changes(sender: Any, batch: ChangeBatch, **kwargs: Any) -> None:
    """``registry_changed`` receiver: this process committed `batch`; tell every listener."""
    rows = [[c.id, c.kind, c.key, c.label, c.list_changed] for c in batch.changes]
    hand_to_hub(list(batch.changes))  # at the end of the committing request, if there is one
    layer = intake.channel_layer()
    if layer is None or intake.in_memory(layer):
        return  # single process: the hub above is everyone
    event = {"type": "registry.changed", "changes": rows}
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is not None:
        loop.create_task(_publish(layer, event))
    elif hub.loop is not None and hub.loop.is_running():
        # The committing request's thread hands the send to the hub's loop and returns at once:
        # waiting for Redis (and for a loop busy fanning out) would add to its latency.
        serving = hub.loop
        serving.call_soon_threadsafe(lambda: serving.create_task(_publish(layer, event)),
                                     context=contextvars.Context())
    else:  # no serving loop in this process (a management command): send before returning
        async_to_sync(_publish)(layer, event)


async def _publish(layer: Any, event: dict[str, Any]) -> None:
    try:
        await layer.group_send(intake.changes_group(), event)
    except Exception:  # the other workers' pollers will catch up from the change log
        layer_health.health.failure(log, "could not publish registry change on the channel layer")
