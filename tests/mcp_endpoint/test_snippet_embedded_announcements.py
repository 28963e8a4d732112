"""A snippet release is announced through a prompt that embeds a registry resource including it:
the listener hears prompts/list_changed and prompts/get then serves the embedded text expanded
with the new snippet version."""

from __future__ import annotations

import pytest
from channels.db import database_sync_to_async

from mcp_endpoint.notify.diff import PROMPTS_CHANGED
from mcp_endpoint.transport.consumers import McpHttpApp
from registry.models import Resource, Snippet
from registry.release import services
from tests.factories import make_prompt, make_resource, make_snippet, release
from tests.mcp_endpoint.test_notifications import next_message, open_listen
from tests.mcp_endpoint.test_snippet_announcements import close, read

pytestmark = pytest.mark.usefixtures("anonymous_allowed", "content_store")


@database_sync_to_async
def setup_embedding() -> None:
    """Snippet 'signature' v1 on production, v2 published; a prompt embedding docs://guide that includes it."""
    signature = make_snippet("signature", text="Regards.")
    release(signature)
    Snippet.objects.filter(pk=signature.pk).update(text="Cheers.")
    release(Snippet.objects.get(pk=signature.pk), labels=("staging",))
    release(make_resource("docs://guide", text="Guide. {{> signature }}"))
    release(make_prompt("reply", messages=[
        {"role": "user", "kind": "text", "text": "About {{ topic }}."},
        {"role": "user", "kind": "resource", "resource": Resource.objects.get(uri="docs://guide")}]))


@database_sync_to_async
def move_signature(version: int) -> None:
    services.move_label(Snippet.objects.get(name="signature"), label="production", version_number=version,
                        acting_user=None)


async def test_a_snippet_release_announces_a_prompt_embedding_a_resource_that_includes_it(transactional_db):
    await setup_embedding()
    app = McpHttpApp()
    before = await read(app, "prompts/get", {"name": "reply", "arguments": {"topic": "owls"}})
    assert before["messages"][1]["content"]["resource"]["text"] == "Guide. Regards."
    comm = await open_listen(app, {"promptsListChanged": True})
    await move_signature(2)
    assert (await next_message(comm))["method"] == PROMPTS_CHANGED
    after = await read(app, "prompts/get", {"name": "reply", "arguments": {"topic": "owls"}})
    assert after["messages"][1]["content"]["resource"]["text"] == "Guide. Cheers."
    await close(comm)
