"""One Python MCP client against the registry: each operation of the client matrix, one JSON line each.

Run by run_matrix.py inside the client's own virtualenv (under /tmp), so it imports only what that
client ships:

    python py_driver.py --flavor mcp1|mcp2|fastmcp --url URL --generation 2025-11-25|2026-07-28|auto

* ``mcp1``: the official Python SDK 1.x (``ClientSession`` over ``streamablehttp_client``); it
  speaks only handshake-era revisions, so it is run at 2025-11-25;
* ``mcp2``: the SDK 2.x ``ClientSession`` over ``streamable_http_client``: ``initialize`` at
  2025-11-25, ``server/discover`` at 2026-07-28, or ``auto`` (the SDK's probe with fallback, which
  must pick 2026-07-28 here);
* ``fastmcp``: ``fastmcp.Client(url, mode=...)``; it has no listen helper of its own, so the
  2026-07-28 listen goes through its SDK session (``mcp.client.subscriptions.listen``).

After subscribing (``resources/subscribe`` + the GET stream, or ``subscriptions/listen``) the
driver runs the shell command in $TRIGGER (it publishes a change of test://watched-resource) and
waits up to 10 s ($NOTIFY_WAIT_SECONDS) for ``notifications/resources/updated``. Each line: {"op", "ok", "detail"}.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

warnings.simplefilter("ignore")  # resources/subscribe is deprecated at 2026-07-28; it is called on purpose

WATCHED = "test://watched-resource"
MODERN = "2026-07-28"
PROMPT = "test_prompt_with_arguments"
TEMPLATE = "test://template/{id}/data"
NOTIFY_WAIT = float(os.environ.get("NOTIFY_WAIT_SECONDS") or 10.0)


def report(op: str, ok: bool, detail: Any = "") -> None:
    print(json.dumps({"op": op, "ok": ok, "detail": str(detail)[:300]}), flush=True)


async def step(op: str, call: Callable[[], Awaitable[Any]]) -> Any:
    try:
        detail = await call()
    except Exception as exc:  # every failure is a table cell
        report(op, False, f"{type(exc).__name__}: {exc}")
        return None
    report(op, True, detail if detail is not None else "")
    return True


class Notes:
    """resources/updated URIs the client's message handler saw."""

    def __init__(self) -> None:
        self.updated: list[str] = []
        self.event = asyncio.Event()

    async def handler(self, message: Any) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            self.updated.append(str(root.params.uri))
            self.event.set()

    async def wait(self) -> str:
        await asyncio.wait_for(self.event.wait(), NOTIFY_WAIT)
        assert WATCHED in self.updated, self.updated
        return f"updated {WATCHED}"


async def trigger() -> None:
    proc = await asyncio.create_subprocess_shell(
        os.environ["TRIGGER"], stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE
    )
    _out, err = await proc.communicate()
    if proc.returncode:
        raise RuntimeError(f"trigger failed: {err.decode()[-300:]}")


def text_of(contents: Any) -> str:
    return getattr(contents[0], "text", "") or ""


async def common_ops(
    session: Any,
    *,
    read: Callable[[str], Awaitable[Any]],
    complete: Callable[[], Awaitable[Any]],
    complete_template: Callable[[], Awaitable[Any]],
    list_prompts: Callable[[], Awaitable[Any]] | None = None,
    list_resources: Callable[[], Awaitable[Any]] | None = None,
    list_templates: Callable[[], Awaitable[Any]] | None = None,
    get_prompt: Callable[[], Awaitable[Any]] | None = None,
    modern: bool = False,
) -> None:
    """The seven request/response operations, on whatever object exposes them."""

    async def prompts_list() -> str:
        result = await (list_prompts or session.list_prompts)()
        names = [p.name for p in getattr(result, "prompts", result)]
        assert PROMPT in names, names
        return f"{len(names)} prompts"

    async def prompts_get() -> str:
        result = await (get_prompt or (lambda: session.get_prompt(PROMPT, {"arg1": "a1", "arg2": "b2"})))()
        text = result.messages[0].content.text
        assert "arg1='a1'" in text and "arg2='b2'" in text, text
        image = await session.get_prompt("test_prompt_with_image")
        assert image.messages[0].content.type == "image" and image.messages[0].content.data, image.messages[0]
        embedded = await session.get_prompt(
            "test_prompt_with_embedded_resource", {"resourceUri": "test://example-resource"}
        )
        assert embedded.messages[0].content.type == "resource", embedded.messages[0]
        return "arguments, image, embedded resource"

    async def resources_list() -> str:
        result = await (list_resources or session.list_resources)()
        uris = [str(r.uri) for r in getattr(result, "resources", result)]
        assert "test://static-text" in uris, uris
        return f"{len(uris)} resources"

    async def resources_read() -> str:
        text = text_of(await read("test://static-text"))
        assert text == "This is the content of the static text resource.", text
        template = text_of(await read("test://template/123/data"))
        assert "123" in template, template
        blob = (await read("test://static-binary"))[0]
        assert blob.blob and (getattr(blob, "mime_type", None) or blob.mimeType) == "image/png", blob
        recent = await read("registry://changes/recent")
        assert len(recent) == 2 and "changes" in recent[1].text, recent
        return "text, template, blob, registry://changes/recent"

    async def templates_list() -> str:
        result = await (list_templates or session.list_resource_templates)()
        listed = getattr(result, "resource_templates", None) or getattr(result, "resourceTemplates", result)
        found = [getattr(t, "uri_template", None) or t.uriTemplate for t in listed]  # 2.x / 1.x field names
        assert TEMPLATE in found, found
        return f"{len(found)} templates"

    async def completion() -> str:
        result = await complete()  # the SDK's CompleteResult, or fastmcp's Completion
        values = getattr(result, "completion", result).values
        assert isinstance(values, list), values
        result = await complete_template()
        names = getattr(result, "completion", result).values
        assert "test_simple_prompt" in names, names
        return f"prompt arg + template variable ({names})"

    async def errors() -> str:
        not_found = (
            -32602 if modern else -32002
        )  # resource not found: -32002 until 2025-11-25, -32602 at 2026-07-28
        codes = []
        for call in (lambda: read("test://nonexistent"), lambda: session.get_prompt(PROMPT, {})):
            try:
                await call()
                codes.append("no error")
            except Exception as exc:  # the SDKs raise McpError/MCPError/ToolError...
                error = getattr(exc, "error", None)
                codes.append(getattr(error, "code", None) or getattr(exc, "code", None) or repr(exc)[:120])
        assert codes == [not_found, -32602], codes
        return f"unknown URI {not_found}, missing argument -32602"

    await step("prompts/list", prompts_list)
    await step("prompts/get", prompts_get)
    await step("resources/list", resources_list)
    await step("resources/read", resources_read)
    await step("resources/templates/list", templates_list)
    await step("completion", completion)
    await step("errors", errors)


async def run_mcp1(url: str, generation: str) -> None:
    from mcp import ClientSession, types
    from mcp.client.streamable_http import streamablehttp_client
    from pydantic import AnyUrl

    notes = Notes()
    async with AsyncExitStack() as stack:
        try:
            read, write, _sid = await stack.enter_async_context(streamablehttp_client(url))
            session = await stack.enter_async_context(
                ClientSession(read, write, message_handler=notes.handler)
            )
            init = await session.initialize()
            report("init", init.protocolVersion == generation, f"initialize -> {init.protocolVersion}")
        except Exception as exc:
            report("init", False, f"{type(exc).__name__}: {exc}")
            return
        ref = types.PromptReference(type="ref/prompt", name=PROMPT)
        changelog = types.ResourceTemplateReference(
            type="ref/resource", uri="registry://prompts/{name}/changelog"
        )
        await common_ops(
            session,
            read=lambda uri: _contents(session.read_resource(AnyUrl(uri))),
            complete=lambda: session.complete(ref, {"name": "arg1", "value": ""}),
            complete_template=lambda: session.complete(changelog, {"name": "name", "value": "test_s"}),
        )

        async def subscribe() -> str:
            await session.subscribe_resource(AnyUrl(WATCHED))
            await asyncio.sleep(0.5)  # the SDK opens the GET stream in the background after initialized
            await trigger()
            return await notes.wait()

        await step("subscribe", subscribe)


async def _contents(call: Awaitable[Any]) -> Any:
    return (await call).contents


async def run_mcp2(url: str, generation: str) -> None:
    import mcp_types as types
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.client.subscriptions import listen

    notes = Notes()
    async with AsyncExitStack() as stack:
        try:
            read, write = await stack.enter_async_context(streamable_http_client(url))
            session = await stack.enter_async_context(
                ClientSession(read, write, message_handler=notes.handler, read_timeout_seconds=20)
            )
            if generation == "2025-11-25":
                init = await session.initialize()
                version = init.protocol_version
                report("init", version == generation, f"initialize -> {version}")
            elif generation == "auto":  # what Client(mode="auto") does: probe, fall back to initialize
                from mcp.client._probe import negotiate_auto

                await negotiate_auto(session)
                version = session.protocol_version
                report("init", version == "2026-07-28", f"auto -> {version}")
                generation = version or generation
            else:
                await session.discover()
                version = session.protocol_version
                report("init", version == generation, f"server/discover -> {version}")
        except Exception as exc:
            report("init", False, f"{type(exc).__name__}: {exc}")
            return
        ref = types.PromptReference(type="ref/prompt", name=PROMPT)
        changelog = types.ResourceTemplateReference(
            type="ref/resource", uri="registry://prompts/{name}/changelog"
        )
        await common_ops(
            session,
            read=lambda uri: _contents(session.read_resource(uri)),
            complete=lambda: session.complete(ref, {"name": "arg1", "value": ""}),
            complete_template=lambda: session.complete(changelog, {"name": "name", "value": "test_s"}),
            modern=generation == MODERN,
        )
        await step(
            "subscribe" if generation == "2025-11-25" else "listen",
            lambda: _subscribe_or_listen(session, generation, notes, listen),
        )


async def _subscribe_or_listen(session: Any, generation: str, notes: Notes, listen: Any) -> str:
    if generation == "2025-11-25":
        await session.subscribe_resource(WATCHED)
        await asyncio.sleep(0.5)  # the SDK opens the GET stream in the background after initialized
        await trigger()
        return await notes.wait()
    async with listen(session, resource_subscriptions=[WATCHED]) as subscription:
        honored = list(subscription.honored.resource_subscriptions or [])
        assert honored == [WATCHED], honored
        await trigger()
        return await notes.wait() + " (acknowledged)"


async def run_fastmcp(url: str, generation: str) -> None:
    import mcp_types as types
    from fastmcp import Client
    from mcp.client.subscriptions import listen

    notes = Notes()
    mode = "legacy" if generation == "2025-11-25" else generation
    client = Client(url, mode=mode, message_handler=notes.handler, timeout=20)
    try:
        await client.__aenter__()
        version = client.protocol_version
        report(
            "init", version == (MODERN if generation == "auto" else generation), f"mode={mode} -> {version}"
        )
        generation = version or generation
    except Exception as exc:
        report("init", False, f"{type(exc).__name__}: {exc}")
        return
    try:
        ref = types.PromptReference(type="ref/prompt", name=PROMPT)
        changelog = types.ResourceTemplateReference(
            type="ref/resource", uri="registry://prompts/{name}/changelog"
        )
        await common_ops(
            client,
            read=client.read_resource,
            get_prompt=lambda: client.get_prompt(PROMPT, {"arg1": "a1", "arg2": "b2"}),
            complete=lambda: client.complete(ref, {"name": "arg1", "value": ""}),
            complete_template=lambda: client.complete(changelog, {"name": "name", "value": "test_s"}),
            modern=generation == MODERN,
        )
        await step(
            "subscribe" if generation == "2025-11-25" else "listen",
            lambda: _subscribe_or_listen(client.session, generation, notes, listen),
        )
    finally:
        await client.__aexit__(None, None, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--flavor", choices=["mcp1", "mcp2", "fastmcp"], required=True)
    parser.add_argument("--url", required=True)
    parser.add_argument("--generation", required=True)
    args = parser.parse_args()
    runner = {"mcp1": run_mcp1, "mcp2": run_mcp2, "fastmcp": run_fastmcp}[args.flavor]
    try:
        asyncio.run(asyncio.wait_for(runner(args.url, args.generation), 90 + NOTIFY_WAIT))
    except Exception as exc:  # a crash is one more failed cell, not a traceback
        report("crash", False, f"{type(exc).__name__}: {exc}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
