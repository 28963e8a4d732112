"""prompts/get: render a prompt, or (2026-07-28, form elicitation) ask for its missing arguments."""

from __future__ import annotations

from typing import Any

from ..wire import errors, shapes
from ..wire.context import RequestContext
from .catalogs import content_call, entry_catalog, long_arguments
from .params import str_param, string_map
from .reads import MissingArguments, form_schema, from_form, source

ARGUMENTS_INPUT = "prompt_arguments"  # our key in inputRequests / inputResponses


async def prompts_get(ctx: RequestContext, params: dict[str, Any]) -> dict[str, Any]:
    """Render a prompt. At 2026-07-28, a client that declared form elicitation and left out
    required arguments gets an InputRequiredResult asking for them (typed form fields), and
    its retry carrying ``inputResponses`` renders; a declined form, or any other client, gets
    the -32602 error that names the missing arguments."""
    name = str_param(params, "name")
    arguments = string_map(params.get("arguments"), "params.arguments")
    catalog = await entry_catalog(ctx, "prompt", name)
    viewer = ctx.identity.viewer
    declined = False
    if ctx.modern and params.get("inputResponses") is not None:
        specs = await content_call(catalog.argument_specs, viewer, name)
        arguments, declined = _with_input_responses(specs, arguments, params["inputResponses"])
    try:
        served = await content_call(catalog.get_prompt, viewer, name, arguments,
                                    off_loop=long_arguments(arguments))
    except MissingArguments as exc:
        if declined or not ctx.elicits_forms:
            raise
        specs = await content_call(catalog.argument_specs, viewer, name)
        return _ask_for_arguments(ctx, catalog.prompt(viewer, name), specs, exc.names)
    source.record_fetch(served, viewer)
    return ctx.complete(shapes.shape_prompt_result(served.result, ctx.version))


def _with_input_responses(specs: Any, arguments: dict[str, Any],
                          responses: Any) -> tuple[dict[str, Any], bool]:
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
            text = from_form(spec, value)
            merged[spec["name"]] = value if text is None else text
    return merged, False


def _ask_for_arguments(ctx: RequestContext, item: Any, all_specs: Any, missing: list[str]) -> dict[str, Any]:
    specs = [spec for spec in all_specs if spec["name"] in missing]
    title = item.listing.get("title") or item.name
    request = {"method": "elicitation/create", "params": {
        "mode": "form",
        "message": f"The prompt {title!r} needs: "
                   + ", ".join(s.get("title") or s["name"] for s in specs) + ".",
        "requestedSchema": form_schema(specs),
    }}
    return ctx.input_required({ARGUMENTS_INPUT: request})
