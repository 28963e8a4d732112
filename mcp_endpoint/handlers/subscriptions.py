"""resources/subscribe and resources/unsubscribe: a legacy session's subscriptions.

The session's row is the record; the hub is told at once, so the session's GET stream (here, or
in another process over the channel layer) hears of the subscribed URI from now on.
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
