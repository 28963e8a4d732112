"""A snippet release is announced through its dependents: listeners hear of the entries whose served
text changed (prompts/list_changed, resources/updated for a subscribed URI), never of the snippet
itself, and nothing of entries that pin another version."""

from __future__ import annotations

import asyncio

import pytest
from channels.db import database_sync_to_async

from mcp_endpoint.notify.diff import PROMPTS_CHANGED, RESOURCE_UPDATED, LabelDiff, notifications_for
from mcp_endpoint.notify.listeners import Listener
from mcp_endpoint.transport.consumers import McpHttpApp
from registry.models import Snippet
from registry.release import services
from registry.serving.items import ComposedPromptItem
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_snippet, release
from tests.mcp_endpoint.conftest import call_asgi, modern_request
from tests.mcp_endpoint.test_notifications import next_message, open_listen, sse_json

pytestmark = pytest.mark.usefixtures("anonymous_allowed", "content_store")


@database_sync_to_async
def setup_style(*, following: bool = True, pinned: bool = True, resource: bool = True) -> None:
    """Snippet 'style' v1 on production and v2 published to staging; its dependents on production."""
    style = make_snippet("style", text="Be brief.")
    release(style)
    Snippet.objects.filter(pk=style.pk).update(text="Be warm.")
    release(Snippet.objects.get(pk=style.pk), labels=("staging",))
    for wanted, name, text in ((following, "reply", "{{> style }} {{ topic }}"),
                               (pinned, "pinned", "{{> style@1 }} {{ topic }}")):
        if wanted:
            release(make_prompt(name, messages=[{"role": "user", "kind": "text", "text": text}]))
    if resource:
        release(make_resource("docs://guide", text="Guide. {{> style }}"))


@database_sync_to_async
def move_style(version: int) -> None:
    services.move_label(Snippet.objects.get(name="style"), label="production", version_number=version,
                        acting_user=None)


async def read(app, method: str, params: dict) -> dict:
    headers, body = modern_request(method, params)
    return (await call_asgi(app, "POST", headers, body)).json()["result"]


async def methods_heard(comm, count: int, timeout: float = 3.0) -> set[str]:
    """The methods of the next `count` messages (one chunk may carry several)."""
    found: list[str] = []
    while len(found) < count:
        chunk = await comm.receive_output(timeout)
        found += [message["method"] for message in sse_json(chunk.get("body", b""))]
    return set(found)


async def close(comm) -> None:
    await comm.send_input({"type": "http.disconnect"})
    await comm.wait(2)


async def test_a_snippet_release_announces_its_dependent_prompt_and_resource(transactional_db):
    await setup_style()
    app = McpHttpApp()
    before = await read(app, "prompts/get", {"name": "reply", "arguments": {"topic": "owls"}})
    assert before["messages"][0]["content"]["text"] == "Be brief. owls"
    comm = await open_listen(app, {"promptsListChanged": True, "resourceSubscriptions": ["docs://guide"]})
    await move_style(2)
    assert await methods_heard(comm, 2) == {PROMPTS_CHANGED, RESOURCE_UPDATED}
    after = await read(app, "prompts/get", {"name": "reply", "arguments": {"topic": "owls"}})
    assert after["messages"][0]["content"]["text"] == "Be warm. owls"
    pinned = await read(app, "prompts/get", {"name": "pinned", "arguments": {"topic": "owls"}})
    assert pinned["messages"][0]["content"]["text"] == "Be brief. owls"
    guide = await read(app, "resources/read", {"uri": "docs://guide"})
    assert guide["contents"][0]["text"] == "Guide. Be warm."
    await close(comm)


async def test_rolling_a_snippet_back_announces_its_dependents_again(transactional_db):
    await setup_style(pinned=False, resource=False)
    app = McpHttpApp()
    comm = await open_listen(app, {"promptsListChanged": True})
    await move_style(2)
    assert (await next_message(comm))["method"] == PROMPTS_CHANGED
    await move_style(1)
    assert (await next_message(comm))["method"] == PROMPTS_CHANGED
    again = await read(app, "prompts/get", {"name": "reply", "arguments": {"topic": "owls"}})
    assert again["messages"][0]["content"]["text"] == "Be brief. owls"
    await close(comm)


async def test_an_entry_that_pins_the_snippet_announces_nothing(transactional_db):
    from mcp_endpoint.notify.hub import hub

    await setup_style(following=False, resource=False)
    app = McpHttpApp()
    comm = await open_listen(app, {"promptsListChanged": True, "resourcesListChanged": True})
    await move_style(2)
    await asyncio.sleep(0.5)
    assert hub.delivered == 0  # the snippet's own change row is not served to anyone
    await close(comm)


def _prompt(parts, tags=frozenset({"support"})) -> ComposedPromptItem:
    return ComposedPromptItem("reply", tags, 1, "production", {"name": "reply"}, {}, 1, parts=parts,
                              includes=("style",))


def test_a_dependent_s_new_parts_are_heard_only_by_those_its_own_tags_admit():
    diff = LabelDiff(prompts=[(_prompt((("style", 1),)), _prompt((("style", 2),)))])
    support = Listener(viewer=Viewer(scope_tags=frozenset({"support"})), render=lambda m, p: b"", prompts=True)
    sales = Listener(viewer=Viewer(scope_tags=frozenset({"sales"})), render=lambda m, p: b"")  # the snippet tag
    assert notifications_for(support, diff, None) == [(PROMPTS_CHANGED, None)]  # type: ignore[arg-type]
    assert notifications_for(sales, diff, None) == []  # type: ignore[arg-type]
