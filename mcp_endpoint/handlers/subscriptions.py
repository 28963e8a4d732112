"""Subscriptions: a legacy session's (resources/subscribe, resources/unsubscribe) and the filter
of a 2026-07-28 subscriptions/listen.

A session's row is the record of its subscriptions; the hub is told at once, so the session's
GET stream (here, or in another process over the channel layer) hears of a subscribed URI from
then on. A listen filter is only validated here; its stream is set up by dispatch/streams.py.
"""

from __future__ import annotations

from typing import Any

from ..notify.hub import hub as notification_hub
from ..settings import mcp_settings
from ..wire import errors
from ..wire.context import RequestContext
from ..wire.sessions import store as session_store
from .params import str_param
from .resources import canonical_uri, resource_exists


async def resources_subscribe(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    uri = canonical_uri(str_param(params, "uri"))
    await resource_exists(ctx, uri)
    limit = int(mcp_settings.MAX_LISTEN_URIS)
    if uri not in ctx.session.subscriptions and len(ctx.session.subscriptions) >= limit:
        raise errors.InvalidParams(f"a session may subscribe to at most {limit} URIs; unsubscribe some first",
                                   data={"limit": limit})
    await session_store.set_subscription(ctx.session, uri, True)
    await notification_hub.session_subscriptions_changed(ctx.session.session_id, ctx.session.subscriptions)
    return {}


async def resources_unsubscribe(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    uri = canonical_uri(str_param(params, "uri"))
    await session_store.set_subscription(ctx.session, uri, False)
    await notification_hub.session_subscriptions_changed(ctx.session.session_id, ctx.session.subscriptions)
    return {}


LISTEN_FILTERS = {
    # filter key -> honoured? (tools never change at run time, so toolsListChanged is not)
    "promptsListChanged": True,
    "resourcesListChanged": True,
    "resourceSubscriptions": True,
    "toolsListChanged": False,
}


def listen_filter(params: dict[str, Any]) -> dict[str, Any]:
    """A subscriptions/listen filter -> what of it is honoured, as the acknowledgement states it.

    Unknown filter keys are ignored and left out; a malformed or oversized URI list is -32602.
    Subscribed URIs are kept in their stored spelling, so they match what notifications name.
    """
    wanted = params.get("notifications")
    if wanted is not None and not isinstance(wanted, dict):
        raise errors.InvalidParams("params.notifications must be an object")
    wanted = wanted or {}
    honoured: dict[str, Any] = {}
    for key in ("promptsListChanged", "resourcesListChanged"):
        if wanted.get(key) is True:
            honoured[key] = True
    uris = wanted.get("resourceSubscriptions")
    if uris is not None:
        if not isinstance(uris, list) or not all(isinstance(u, str) for u in uris):
            raise errors.InvalidParams("notifications.resourceSubscriptions must be a list of URI strings")
        limit = int(mcp_settings.MAX_LISTEN_URIS)
        if len(uris) > limit:
            raise errors.InvalidParams(f"notifications.resourceSubscriptions may hold at most {limit} URIs",
                                       data={"limit": limit})
        honoured["resourceSubscriptions"] = list(dict.fromkeys(canonical_uri(u) for u in uris))
    return honoured
