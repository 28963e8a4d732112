"""One short async function per MCP method: adapters onto ``registry.catalog``.

This is the only ``mcp_endpoint`` module that imports ``registry``. Handlers return result dicts
(or pre-serialised :class:`RawJSON` for cached pages) already shaped for the request's revision;
domain errors propagate and are mapped by the dispatcher through :func:`translate_domain_error`.

Hot path (list/get/read with the label's catalog in memory): no database query, no thread hop.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import logging
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from registry import argtypes, catalog, catalog_pages, clients, fetches, uris, warmup
from registry import errors as registry_errors
from registry.models.base import PRODUCTION

from .notify.hub import hub as notification_hub
from .result_cache import ResultCache
from .settings import mcp_settings, on_reload
from .wire import errors, shapes
from .wire.context import Identity, RequestContext
from .wire.jsonrpc import RawJSON, dumps
from .wire.pagination import cursor_key, paginate
from .wire.sessions import LOG_LEVELS
from .wire.sessions import store as session_store

logger = logging.getLogger(__name__)

MAX_COMPLETION_VALUES = 100
_CACHEABLE_READ_BYTES = 256 * 1024  # larger reads are served fresh rather than cached


class RegistrySource:
    """The registry entry points the handlers use, behind one seam (tests may pass a fake)."""

    def cached_catalog(self, label: str) -> Any:
        return catalog.cached_catalog(label)

    def load_catalog(self, label: str) -> Any:
        return catalog.load_catalog(label)

    def warm_catalog(self, label: str) -> Any:
        """A concurrent Future of the label's whole catalog, built in a background thread."""
        return warmup.warm(label)

    def page_catalog(self, label: str, kind: str, viewer: Any, after: str | None, count: int) -> Any:
        """Sync, queries: a catalog answering one list page (the whole one if fresh by now)."""
        return catalog_pages.page_catalog(label, kind, viewer, after, count)

    def entry_catalog(self, label: str, kind: str, key: str, viewer: Any) -> Any:
        """Sync, queries: a catalog answering a get/read of one entry, or None (use the whole one)."""
        return catalog_pages.entry_catalog(label, kind, key, viewer)

    def record_fetch(self, served: Any, viewer: Any) -> None:
        fetches.record_fetch(served, viewer)

    def anonymous_viewer(self) -> Any:
        return catalog.Viewer()

    def cached_viewer(self, raw_token: str) -> tuple[bool, Any]:
        """(known, viewer-or-None) from the registry's in-memory token cache; no database."""
        return clients.cached_viewer(raw_token)

    def load_viewer(self, raw_token: str) -> Any:
        """Sync, queries the database. None for unknown, expired or revoked tokens."""
        return clients.load_viewer(raw_token)

    def viewer_by_name(self, name: str) -> Any:
        return clients.client_by_name(name)


source = RegistrySource()


_results = ResultCache(lambda: mcp_settings.RESULT_CACHE_BYTES, lambda: mcp_settings.RESULT_CACHE_SIZE)
_secret_cache: list[bytes] = []


def reset_caches() -> None:
    _results.clear()
    _anonymous.clear()
    _secret_cache.clear()


on_reload(reset_caches)


def _secret() -> bytes:
    if not _secret_cache:
        _secret_cache.append(hashlib.sha256(b"mcp_endpoint.cursor:" + settings.SECRET_KEY.encode()).digest())
    return _secret_cache[0]


# --------------------------------------------------------------------------- identity


def identity_of(viewer: Any) -> Identity:
    """Registry Viewer -> transport identity.

    Results differ from what anonymous callers get (production, everything) for clients limited
    to tags and for clients bound to another label: both must be cached privately."""
    return Identity(viewer=viewer, client_id=viewer.client_id,
                    scoped=bool(viewer.scope_tags) or viewer.label != PRODUCTION, label=viewer.label)


_anonymous: list[Identity] = []


def anonymous() -> Identity:
    """Anonymous viewers get the production label and no scope (one shared, immutable identity)."""
    if not _anonymous:
        _anonymous.append(identity_of(source.anonymous_viewer()))
    return _anonymous[0]


async def authenticate(authorization: str | None, resource: str | None = None) -> Identity:
    """``Authorization`` header -> Identity, or :class:`errors.Unauthorized` (HTTP 401).
    No header is accepted only while ALLOW_ANONYMOUS is on; a bad token is never anonymous.
    Pre-shared ``mcpr_`` tokens are the registry's; any other token is an OAuth access token,
    which must have been issued for ``resource`` (this endpoint's public URL, RFC 8707).
    Both kinds are cached in memory, so the hot path makes no query."""
    if not authorization:
        if mcp_settings.ALLOW_ANONYMOUS:
            return anonymous()
        raise errors.Unauthorized()
    scheme, _, token = authorization.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise errors.Unauthorized("Unauthorized: use Authorization: Bearer <token>")
    if not token.startswith(clients.TOKEN_PREFIX):
        viewer = await _oauth_viewer(token, resource or "")
        return dataclasses.replace(identity_of(viewer), oauth_token=hashlib.sha256(token.encode()).hexdigest())
    known, viewer = source.cached_viewer(token)
    if not known:
        viewer = await database_sync_to_async(source.load_viewer)(token)
    if viewer is None:
        raise errors.InvalidToken("Unauthorized: invalid, expired or revoked token")
    return dataclasses.replace(identity_of(viewer), token_hash=clients.hash_token(token))


async def _oauth_viewer(token: str, resource: str) -> Any:
    from oauth import bearer  # the OAuth app is optional to the transport; imported on first use

    known, result = bearer.cached(token, resource)
    if not known:
        try:
            result = await database_sync_to_async(bearer.resolve)(token, resource)
        except bearer.OAuthRefusal as refusal:
            result = refusal
    if isinstance(result, bearer.OAuthRefusal):
        kind = errors.InsufficientScope if result.error == "insufficient_scope" else errors.InvalidToken
        raise kind(f"{'Forbidden' if kind is errors.InsufficientScope else 'Unauthorized'}: {result.description}")
    return result


async def still_authorised(identity: Identity) -> bool:
    """For long-lived streams: does the identity the stream was opened with still stand, as it
    was? Not if the client was revoked or expired, its token re-issued, its label or tags changed
    (the stream would go on judging for the old ones), or, for OAuth, the token revoked,
    expired or deleted, its user deactivated or its connection deleted."""
    if identity.client_id is None:
        return True
    if identity.oauth_token:
        from oauth import bearer

        if not await database_sync_to_async(bearer.token_usable)(identity.oauth_token, identity.client_id):
            return False
    viewer = identity.viewer
    return await database_sync_to_async(clients.still_serves)(
        identity.client_id, label=viewer.label, scope=viewer.scope_tags, token_hash=identity.token_hash or None)


def authenticate_stdio(client_name: str | None) -> Identity:
    """stdio takes its credentials from the environment: ``--client NAME`` picks a registry
    client by name (sync: call it before the event loop starts); none means anonymous."""
    if not client_name:
        return anonymous()
    viewer = source.viewer_by_name(client_name)
    if viewer is None:
        raise errors.Unauthorized(f"Unknown or disabled client {client_name!r}")
    return identity_of(viewer)


# --------------------------------------------------------------------------- domain errors


def translate_outage(exc: BaseException) -> errors.McpError | None:
    """A dependency outage (database, content store; registry/outages.py) -> -32603 with HTTP 503."""
    from registry.outages import outage_of

    outage = outage_of(exc)
    return None if outage is None else errors.ServiceUnavailable(outage.message)


def translate_domain_error(exc: BaseException) -> errors.McpError | None:
    """Registry error -> protocol error kind (the dispatcher picks era-specific codes)."""
    if isinstance(exc, registry_errors.UnknownPrompt):
        return errors.InvalidParams(exc.message, data={"name": exc.name})
    if isinstance(exc, registry_errors.MissingArguments):
        return errors.InvalidParams(exc.message, data={"missing": list(exc.names)})
    if isinstance(exc, registry_errors.ArgumentErrors):
        return errors.InvalidParams(exc.message, data={"invalid": [dict(i) for i in exc.invalid],
                                                       "missing": list(exc.missing)})
    if isinstance(exc, registry_errors.UnknownResource):
        return errors.ResourceNotFound(exc.uri)
    if isinstance(exc, registry_errors.InvalidUri):
        return errors.InvalidParams(exc.message, data={"uri": exc.uri})
    if isinstance(exc, registry_errors.InvalidArguments):
        return errors.InvalidParams(exc.message)
    if isinstance(exc, registry_errors.ContentMissing):
        return errors.InternalError(exc.message, data={"sha256": exc.sha256})
    return None


# --------------------------------------------------------------------------- catalog


async def get_catalog(label: str) -> Any:
    """The label's in-memory snapshot; on a miss, wait for its build in the background (one
    per label, registry/warmup.py), which concurrent callers share."""
    catalog = source.cached_catalog(label)
    if catalog is not None:
        return catalog
    await _start_hub()
    return await asyncio.shield(asyncio.wrap_future(source.warm_catalog(label)))


async def _start_hub() -> None:
    # A process that serves requests must hear of changes committed elsewhere even if it never
    # holds a stream, or its cached catalogs would never go stale: start the hub's catch-up.
    await notification_hub.start()


async def _page_catalog(label: str, kind: str, viewer: Any, after: str | None) -> Any:
    """On a miss, a list page need not wait for the whole catalog: it is read from the database
    (registry/catalog_pages.py), then the catalog's build starts in the background."""
    catalog = source.cached_catalog(label)
    if catalog is not None:
        return catalog
    await _start_hub()
    catalog = await database_sync_to_async(source.page_catalog)(label, kind, viewer, after,
                                                                mcp_settings.PAGE_SIZE + 1)
    if getattr(catalog, "partial", False):
        source.warm_catalog(label)
    return catalog


async def _entry_catalog(ctx: RequestContext, kind: str, key: str) -> Any:
    """On a miss, a get or read of one entry need not wait for the whole catalog either, when
    that entry alone answers it (registry/catalog_pages.py); the catalog's build starts then."""
    label = ctx.identity.label
    catalog = source.cached_catalog(label)
    if catalog is not None:
        return catalog
    await _start_hub()
    catalog = await database_sync_to_async(source.entry_catalog)(label, kind, key, ctx.identity.viewer)
    if catalog is None:
        return await get_catalog(label)
    if getattr(catalog, "partial", False):
        source.warm_catalog(label)
    return catalog


async def _content_call(method: Any, *args: Any, off_loop: bool = False) -> Any:
    """Run a catalog read; content not in memory yet is loaded in a worker thread (one read).
    ``off_loop``: the whole call runs in a worker thread of its own (long argument checks), so
    other clients' requests on this event loop are not held up behind it."""
    if off_loop:
        return await database_sync_to_async(method, thread_sensitive=False)(*args)
    try:
        return method(*args)
    except catalog.ContentNotLoaded:
        return await database_sync_to_async(method)(*args)


def _long_arguments(arguments: dict[str, Any]) -> bool:
    """Whether checking and rendering these values may take long enough to stall the event loop:
    any value past the length a patterned argument accepts by default."""
    return sum(len(value) for value in arguments.values() if isinstance(value, str)) \
        > argtypes.PATTERN_VALUE_MAX_LENGTH


def _str_param(params: dict[str, Any], name: str) -> str:
    value = params.get(name)
    if not isinstance(value, str) or not value:
        raise errors.InvalidParams(f"params.{name} must be a non-empty string")
    return value


def _string_map(value: Any, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise errors.InvalidParams(f"{what} must be an object of string values")
    return value


# --------------------------------------------------------------------------- lists


def _personalisation(catalog: Any, viewer: Any) -> tuple[bool, tuple]:
    """(results differ per client, cache-key variant). Percentage rollouts serve some clients a
    candidate version; their results are private and cached per variant."""
    personalised = getattr(catalog, "personalised", None)
    if personalised is None or not personalised(viewer):
        return False, ()
    return True, tuple(catalog.variant(viewer))


async def _list(ctx: RequestContext, params: dict[str, Any], *, method: str, field: str, key: str,
                sorted_by_key: bool) -> RawJSON:
    cursor = params.get("cursor")
    if cursor is not None and not isinstance(cursor, str):
        raise errors.InvalidParams("params.cursor must be a string from an earlier nextCursor")
    viewer = ctx.identity.viewer
    if mcp_settings.PAGE_SIZE > 0:
        after = cursor_key(_secret(), method, cursor) if sorted_by_key else None
        catalog = await _page_catalog(ctx.identity.label, _KINDS[method], viewer, after)
    else:  # one page holds everything: nothing to gain from reading a part
        catalog = await get_catalog(ctx.identity.label)
    private, variant = _personalisation(catalog, viewer)
    cache_key = (method, ctx.identity.cache_key, ctx.version, ctx.cache_scope, private, variant, cursor,
                 mcp_settings.PAGE_SIZE)
    hit = _results.get(cache_key, catalog.generation)
    if hit is not None:
        return hit
    items = getattr(catalog, field)(viewer)
    page, next_cursor = paginate(items, kind=method, key=key, cursor=cursor, page_size=mcp_settings.PAGE_SIZE,
                                 secret=_secret(), sorted_by_key=sorted_by_key,
                                 partial=bool(getattr(catalog, "partial", False)) and sorted_by_key)
    result: dict[str, Any] = {_LIST_FIELDS[method]: shapes.shape_items(page, ctx.version)}
    if next_cursor:
        result["nextCursor"] = next_cursor
    raw = RawJSON(dumps(ctx.complete(result, cacheable=True, private=private)))
    _results.put(cache_key, raw, catalog.generation, len(raw.data))
    return raw


_KINDS = {"prompts/list": "prompt", "resources/list": "resource", "resources/templates/list": "template"}
_LIST_FIELDS = {"prompts/list": "prompts", "resources/list": "resources",
                "resources/templates/list": "resourceTemplates"}


async def prompts_list(ctx: RequestContext, params: dict[str, Any]) -> RawJSON:
    return await _list(ctx, params, method="prompts/list", field="prompts", key="name", sorted_by_key=True)


async def resources_list(ctx: RequestContext, params: dict[str, Any]) -> RawJSON:
    return await _list(ctx, params, method="resources/list", field="resources", key="uri", sorted_by_key=True)


async def resource_templates_list(ctx: RequestContext, params: dict[str, Any]) -> RawJSON:
    return await _list(ctx, params, method="resources/templates/list", field="templates", key="uriTemplate",
                       sorted_by_key=False)


# --------------------------------------------------------------------------- prompts / resources


ARGUMENTS_INPUT = "prompt_arguments"  # our key in inputRequests / inputResponses


async def prompts_get(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Render a prompt. At 2026-07-28, a client that declared form elicitation and left out
    required arguments gets an InputRequiredResult asking for them (typed form fields), and
    its retry carrying ``inputResponses`` renders; a declined form, or any other client, gets
    the -32602 error that names the missing arguments."""
    name = _str_param(params, "name")
    arguments = _string_map(params.get("arguments"), "params.arguments")
    catalog = await _entry_catalog(ctx, "prompt", name)
    viewer = ctx.identity.viewer
    declined = False
    if ctx.modern and params.get("inputResponses") is not None:
        specs = await _content_call(catalog.argument_specs, viewer, name)
        arguments, declined = _with_input_responses(specs, arguments, params["inputResponses"])
    try:
        served = await _content_call(catalog.get_prompt, viewer, name, arguments, off_loop=_long_arguments(arguments))
    except registry_errors.MissingArguments as exc:
        if declined or not ctx.elicits_forms:
            raise
        specs = await _content_call(catalog.argument_specs, viewer, name)
        return _ask_for_arguments(ctx, catalog.prompt(viewer, name), specs, exc.names)
    source.record_fetch(served, viewer)
    return ctx.complete(shapes.shape_prompt_result(served.result, ctx.version))


def _with_input_responses(specs: Any, arguments: dict[str, Any], responses: Any) -> tuple[dict[str, Any], bool]:
    """(arguments plus the values the user entered in our form, whether the user declined it).

    Keys other than ours are ignored, as the spec asks; form values (strings, numbers,
    booleans) become the strings MCP would have sent, and the render checks them like any."""
    if not isinstance(responses, dict):
        raise errors.InvalidParams("params.inputResponses must be an object of responses")
    answer = responses.get(ARGUMENTS_INPUT)
    if answer is None:
        return arguments, False
    if not isinstance(answer, dict) or answer.get("action") not in ("accept", "decline", "cancel"):
        raise errors.InvalidParams(f"params.inputResponses.{ARGUMENTS_INPUT} must be an elicitation result "
                                   "with action accept, decline or cancel")
    if answer["action"] != "accept":
        return arguments, True
    content = answer.get("content") or {}
    if not isinstance(content, dict):
        raise errors.InvalidParams(f"params.inputResponses.{ARGUMENTS_INPUT}.content must be an object")
    merged: dict[str, Any] = dict(arguments)
    for spec in specs:
        if spec["name"] in content and spec["name"] not in arguments:
            value = content[spec["name"]]
            text = argtypes.from_form(spec, value)
            merged[spec["name"]] = value if text is None else text
    return merged, False


def _ask_for_arguments(ctx: RequestContext, item: Any, all_specs: Any, missing: list[str]) -> dict[str, Any]:
    specs = [spec for spec in all_specs if spec["name"] in missing]
    title = item.listing.get("title") or item.name
    request = {"method": "elicitation/create", "params": {
        "mode": "form",
        "message": f"The prompt {title!r} needs: " + ", ".join(s.get("title") or s["name"] for s in specs) + ".",
        "requestedSchema": argtypes.form_schema(specs),
    }}
    return ctx.input_required({ARGUMENTS_INPUT: request})


async def resources_read(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any] | RawJSON:
    uri = _str_param(params, "uri")
    catalog = await _entry_catalog(ctx, "resource", uri)
    private, variant = _personalisation(catalog, ctx.identity.viewer)
    cache_key = ("resources/read", ctx.identity.cache_key, ctx.version, ctx.cache_scope, private, variant, uri)
    hit = _results.get(cache_key, catalog.generation)
    if hit is not None:
        served, raw = hit
        source.record_fetch(served, ctx.identity.viewer)
        return raw
    served = await _content_call(catalog.read_resource, ctx.identity.viewer, uri)
    if not served.result.get("contents"):
        raise errors.ResourceNotFound(uri)  # never answer with empty contents
    raw = RawJSON(dumps(ctx.complete(shapes.shape_contents(served.result, ctx.version), cacheable=True,
                                     private=private, ttl_ms=getattr(served, "ttl_ms", None),
                                     cache_scope=getattr(served, "cache_scope", None))))
    if len(raw.data) <= _CACHEABLE_READ_BYTES:
        _results.put(cache_key, (served, raw), catalog.generation, len(raw.data))
    source.record_fetch(served, ctx.identity.viewer)
    return raw


def canonical_uri(uri: str) -> str:
    """The stored spelling of a client's URI, so subscriptions match what notifications name."""
    return uris.lookup_uri(uri)


async def _resource_exists(ctx: RequestContext, uri: str) -> None:
    catalog = await get_catalog(ctx.identity.label)
    if any(r.get("uri") == uri for r in catalog.resources(ctx.identity.viewer)):
        return
    await _content_call(catalog.read_resource, ctx.identity.viewer, uri)  # templated URIs: UnknownResource if none


async def resources_subscribe(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    uri = canonical_uri(_str_param(params, "uri"))
    await _resource_exists(ctx, uri)
    limit = int(mcp_settings.MAX_LISTEN_URIS)
    if uri not in ctx.session.subscriptions and len(ctx.session.subscriptions) >= limit:
        raise errors.InvalidParams(f"a session may subscribe to at most {limit} URIs; unsubscribe some first",
                                   data={"limit": limit})
    await session_store.set_subscription(ctx.session, uri, True)
    await notification_hub.session_subscriptions_changed(ctx.session.session_id, ctx.session.subscriptions)
    return {}


async def resources_unsubscribe(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    uri = canonical_uri(_str_param(params, "uri"))
    await session_store.set_subscription(ctx.session, uri, False)
    await notification_hub.session_subscriptions_changed(ctx.session.session_id, ctx.session.subscriptions)
    return {}


async def completion_complete(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    ref = params.get("ref")
    if not isinstance(ref, dict) or ref.get("type") not in ("ref/prompt", "ref/resource"):
        raise errors.InvalidParams("params.ref must be a ref/prompt or ref/resource reference")
    _str_param(ref, "name" if ref["type"] == "ref/prompt" else "uri")
    argument = params.get("argument")
    if not isinstance(argument, dict) or not isinstance(argument.get("name"), str) \
            or not isinstance(argument.get("value", ""), str):
        raise errors.InvalidParams("params.argument must be {name: string, value: string}")
    context = params.get("context") or {}
    if not isinstance(context, dict):
        raise errors.InvalidParams("params.context must be an object")
    known = _string_map(context.get("arguments"), "params.context.arguments")
    catalog = await get_catalog(ctx.identity.label)
    found = catalog.complete(ctx.identity.viewer, ref, argument["name"], argument.get("value", ""), known)
    values = list(found.get("values") or [])
    completion: dict[str, Any] = {"values": values[:MAX_COMPLETION_VALUES]}
    total = found.get("total")
    if isinstance(total, int):
        completion["total"] = max(total, len(values))
    has_more = bool(found.get("hasMore")) or len(values) > MAX_COMPLETION_VALUES
    if has_more or "hasMore" in found:
        completion["hasMore"] = has_more
    return ctx.complete({"completion": completion})


async def logging_set_level(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    level = params.get("level")
    if level not in LOG_LEVELS:
        raise errors.InvalidParams(f"params.level must be one of {', '.join(LOG_LEVELS)}", data={"level": level})
    await session_store.set_log_level(ctx.session, level)
    return {}


# --------------------------------------------------------------------------- mirror tools
# Read-only tools that mirror prompts/resources for clients that only speak tools.

_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_prompt",
        "title": "Get prompt",
        "description": "Render a registry prompt with its arguments and return its messages.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": "Prompt name (see prompts/list or search_registry)."},
                "arguments": {"type": "object", "additionalProperties": {"type": "string"},
                              "description": "Prompt arguments; every value is a string."},
            },
            "required": ["name"],
        },
        "annotations": dict(_READ_ONLY, title="Get prompt"),
    },
    {
        "name": "read_resource",
        "title": "Read resource",
        "description": "Read a registry resource (or a URI matching a resource template).",
        "inputSchema": {
            "type": "object",
            "properties": {"uri": {"type": "string", "description": "Resource URI."}},
            "required": ["uri"],
        },
        "annotations": dict(_READ_ONLY, title="Read resource"),
    },
    {
        "name": "search_registry",
        "title": "Search registry",
        "description": "Find prompts and resources whose name, title, URI or description contains the query.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Case-insensitive text to look for."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100, "description": "Most results (20)."},
            },
            "required": ["query"],
        },
        "annotations": dict(_READ_ONLY, title="Search registry"),
    },
]


async def tools_list(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    if params.get("cursor") is not None:
        raise errors.InvalidParams("Invalid cursor", data={"cursor": params.get("cursor")})
    return ctx.complete({"tools": [shapes.shape_tool(t, ctx.version) for t in TOOLS]}, cacheable=True)


def _tool_error(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


async def _tool_get_prompt(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    name = args.get("name")
    if not isinstance(name, str) or not name:
        return _tool_error("Argument 'name' must be a non-empty string.")
    arguments = args.get("arguments") or {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        return _tool_error("Argument 'arguments' must be an object of string values.")
    catalog = await get_catalog(ctx.identity.label)
    served = await _content_call(catalog.get_prompt, ctx.identity.viewer, name, arguments,
                                 off_loop=_long_arguments(arguments))
    source.record_fetch(served, ctx.identity.viewer)
    content: list[dict[str, Any]] = []
    if served.result.get("description"):
        content.append({"type": "text", "text": f"Prompt {name}: {served.result['description']}"})
    for message in served.result.get("messages", []):
        block = message.get("content") or {}
        if block.get("type") == "text":
            content.append({"type": "text", "text": f"[{message.get('role', 'user')}] {block.get('text', '')}"})
        else:
            content.append(block)
    return {"content": content, "isError": False}


async def _tool_read_resource(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    uri = args.get("uri")
    if not isinstance(uri, str) or not uri:
        return _tool_error("Argument 'uri' must be a non-empty string.")
    catalog = await get_catalog(ctx.identity.label)
    served = await _content_call(catalog.read_resource, ctx.identity.viewer, uri)
    contents = served.result.get("contents") or []
    if not contents:
        return _tool_error(f"Resource not found: {uri}")
    source.record_fetch(served, ctx.identity.viewer)
    return {"content": [{"type": "resource", "resource": item} for item in contents], "isError": False}


async def _tool_search(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    query = args.get("query")
    limit = args.get("limit", 20)
    if not isinstance(query, str):
        return _tool_error("Argument 'query' must be a string.")
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 100:
        return _tool_error("Argument 'limit' must be an integer from 1 to 100.")
    needle = query.strip().lower()
    catalog = await get_catalog(ctx.identity.label)
    viewer = ctx.identity.viewer

    def hit(item: dict[str, Any], *fields: str) -> bool:
        return any(needle in str(item.get(f) or "").lower() for f in fields)

    content: list[dict[str, Any]] = []
    for prompt in catalog.prompts(viewer):
        if len(content) >= limit:
            break
        if hit(prompt, "name", "title", "description"):
            args_list = ", ".join(a.get("name", "") for a in prompt.get("arguments") or [])
            text = f"Prompt {prompt['name']}({args_list})"
            if prompt.get("description"):
                text += f": {prompt['description']}"
            content.append({"type": "text", "text": text + "  (use get_prompt)"})
    for resource in catalog.resources(viewer):
        if len(content) >= limit:
            break
        if hit(resource, "uri", "name", "title", "description"):
            link = {"type": "resource_link"}
            link.update({k: resource[k] for k in ("uri", "name", "title", "description", "mimeType", "size")
                         if resource.get(k) is not None})
            content.append(link)
    if not content:
        content.append({"type": "text", "text": f"No prompts or resources match {query!r}."})
    return {"content": content, "isError": False}


_TOOL_IMPLS = {"get_prompt": _tool_get_prompt, "read_resource": _tool_read_resource, "search_registry": _tool_search}


async def tools_call(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Tool failures (unknown tool, bad arguments, unknown prompt/resource) are results with
    ``isError: true`` so the model can read them, not JSON-RPC errors."""
    name = params.get("name")
    args = params.get("arguments")
    impl = _TOOL_IMPLS.get(name) if isinstance(name, str) else None
    if impl is None:
        result = _tool_error(f"Unknown tool: {name!r}")
    elif args is not None and not isinstance(args, dict):
        result = _tool_error("Tool arguments must be an object.")
    else:
        try:
            result = await impl(ctx, args or {})
        except registry_errors.RegistryError as exc:
            result = _tool_error(exc.message)
        except errors.McpError as exc:
            result = _tool_error(exc.message)
    return ctx.complete(shapes.shape_tool_result(result, ctx.version))
