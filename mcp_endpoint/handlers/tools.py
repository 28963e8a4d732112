"""Read-only tools that mirror prompts and resources, for clients that only speak tools.

Tool failures (an unknown tool, bad arguments, an unknown prompt or resource) are results with
``isError: true`` that the model can read, never JSON-RPC errors.
"""

from __future__ import annotations

from typing import Any

from ..wire import errors, shapes
from ..wire.context import RequestContext
from .catalogs import content_call, get_catalog, long_arguments
from .reads import RegistryError, source

_READ_ONLY = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False}

TOOLS: list[dict[str, Any]] = [
    {
        "name": "get_prompt",
        "title": "Get prompt",
        "description": "Render a registry prompt with its arguments and return its messages.",
        "inputSchema": {
            "type": "object",
            "properties": {
                "name": {"type": "string",
                         "description": "Prompt name (see prompts/list or search_registry)."},
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
                "limit": {"type": "integer", "minimum": 1, "maximum": 100,
                          "description": "Most results (20)."},
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
    served = await content_call(catalog.get_prompt, ctx.identity.viewer, name, arguments,
                                 off_loop=long_arguments(arguments))
    source.record_fetch(served, ctx.identity.viewer)
    content: list[dict[str, Any]] = []
    if served.result.get("description"):
        content.append({"type": "text", "text": f"Prompt {name}: {served.result['description']}"})
    for message in served.result.get("messages", []):
        block = message.get("content") or {}
        if block.get("type") == "text":
            role, text = message.get("role", "user"), block.get("text", "")
            content.append({"type": "text", "text": f"[{role}] {text}"})
        else:
            content.append(block)
    return {"content": content, "isError": False}


async def _tool_read_resource(ctx: RequestContext, args: dict[str, Any]) -> dict[str, Any]:
    uri = args.get("uri")
    if not isinstance(uri, str) or not uri:
        return _tool_error("Argument 'uri' must be a non-empty string.")
    catalog = await get_catalog(ctx.identity.label)
    served = await content_call(catalog.read_resource, ctx.identity.viewer, uri)
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


_TOOL_IMPLS = {"get_prompt": _tool_get_prompt, "read_resource": _tool_read_resource,
               "search_registry": _tool_search}


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
        except RegistryError as exc:
            result = _tool_error(exc.message)
        except errors.McpError as exc:
            result = _tool_error(exc.message)
    return ctx.complete(shapes.shape_tool_result(result, ctx.version))
