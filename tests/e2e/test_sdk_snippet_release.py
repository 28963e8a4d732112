"""A snippet release heard through its dependents by official SDK clients of both wire generations.

One daphne worker; a snippet 'e2e-style' (v1 on production, v2 published to staging) that a prompt
and a text resource follow, and a prompt that pins v1. A 2026-07-28 ``Client`` listening
(``subscriptions/listen``: prompt list changes and the resource) and a 2025-11-25
``ClientSession`` (subscribed to the resource, notifications on its GET stream) are both open
when production is moved to v2 by ``label.save()`` in a separate ``manage.py shell`` process (the
worker learns of it from the change log). Both hear ``prompts/list_changed`` and
``resources/updated`` for the resource; re-reads serve the expanded v2 text, and the pinning
prompt still serves v1.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.servers import Server, amanage, base_env, logs_on_failure, manage, prepare_database
from tests.e2e.test_sdk_live_updates import PROMPTS_CHANGED, UPDATED, WAIT, Inbox, legacy_client, modern_client

pytestmark = pytest.mark.e2e

DOC = "docs://e2e-styled"
SETUP = (
    "from registry.models import Snippet\n"
    "from tests.factories import make_prompt, make_resource, make_snippet, release\n"
    "style = make_snippet('e2e-style', text='Be brief.')\n"
    "release(style)\n"
    "Snippet.objects.filter(pk=style.pk).update(text='Be warm.')\n"
    "release(Snippet.objects.get(pk=style.pk), labels=('staging',))\n"
    "def text(t): return [{'role': 'user', 'kind': 'text', 'text': t}]\n"
    "release(make_prompt('e2e-styled', messages=text('{{> e2e-style }} {{ topic }}')))\n"
    "release(make_prompt('e2e-pinned', messages=text('{{> e2e-style@1 }} {{ topic }}')))\n"
    f"release(make_resource('{DOC}', text='Guide. {{{{> e2e-style }}}}'))\n"
)
MOVE = (
    "from registry.models import SnippetLabel\n"
    "label = SnippetLabel.objects.get(entry__name='e2e-style', name='production')\n"
    "label.version = label.entry.versions.get(number=2)\n"
    "label.save()\n"
)


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Any:
    folder = tmp_path_factory.mktemp("sdk-snippets")
    env = base_env(f"sqlite:///{folder}/snippets.sqlite3")
    prepare_database(env)
    manage(env, "shell", "-v", "0", "-c", SETUP)
    with Server("daphne", env, folder) as server, logs_on_failure(server):
        yield env, f"http://127.0.0.1:{server.port}/mcp"


def first_text(result: Any) -> str:
    return result.messages[0].content.text


async def test_both_sdk_generations_hear_a_snippet_release_through_a_dependent_prompt_and_resource(base):
    env, url = base
    modern, legacy = Inbox(), Inbox()
    async with modern_client(url, modern, [DOC]) as client, legacy_client(url, legacy, [DOC]) as session:
        assert first_text(await client.get_prompt("e2e-styled", {"topic": "owls"})) == "Be brief. owls"
        assert (await session.read_resource(DOC)).contents[0].text == "Guide. Be brief."
        await amanage(env, "shell", "-c", MOVE)
        for inbox in (modern, legacy):
            await inbox.wait_for(UPDATED, DOC, since=0, timeout=WAIT)
        await modern.wait_for(PROMPTS_CHANGED, since=0, timeout=WAIT)
        await legacy.wait_for(PROMPTS_CHANGED, since=0, timeout=WAIT)
        assert first_text(await client.get_prompt("e2e-styled", {"topic": "owls"})) == "Be warm. owls"
        assert first_text(await session.get_prompt("e2e-styled", {"topic": "owls"})) == "Be warm. owls"
        assert first_text(await client.get_prompt("e2e-pinned", {"topic": "owls"})) == "Be brief. owls"
        assert (await client.read_resource(DOC)).contents[0].text == "Guide. Be warm."
        assert (await session.read_resource(DOC)).contents[0].text == "Guide. Be warm."
