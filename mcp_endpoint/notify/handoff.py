"""Changes committed by an HTTP request reach this process's hub once its response is out.

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

import threading
from typing import Any

from registry.changes import Change

SAFETY_NET_SECONDS = 0.25

# Per thread: a request's changes waiting for its end (None outside a request). Django runs a
# request's sync code (signals, view, response.close) in one thread, its own under ASGI.
_request = threading.local()


def request_started(sender: Any, **kwargs: Any) -> None:
    _request.deferred = []


def request_finished(sender: Any, **kwargs: Any) -> None:
    deferred, _request.deferred = getattr(_request, "deferred", None), None
    if deferred:
        from .hub import hub

        for changes in deferred:
            hub.submit_threadsafe(changes, release=True)


def hand_to_hub(changes: list[Change]) -> None:
    """Offer committed changes to this process's hub: now, or at the end of the running request."""
    from .hub import hub

    deferred = getattr(_request, "deferred", None)
    if deferred is None:
        hub.submit_threadsafe(changes)
        return
    deferred.append(changes)
    hub.hold_threadsafe(changes, SAFETY_NET_SECONDS)
