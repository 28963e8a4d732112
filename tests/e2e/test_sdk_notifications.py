"""The promise end to end: an official SDK client subscribes, a publisher publishes in the admin,
the client is notified, re-reads and sees the new content — at both wire generations, against
a real daphne process serving admin and MCP together."""

from __future__ import annotations

import http.cookiejar
import re
import time
import urllib.parse
import urllib.request

import anyio
import pytest

from tests.e2e.servers import Server, base_env, changed_fixture, manage, prepare_database

pytestmark = pytest.mark.e2e

URI = "test://watched-resource"
PASSWORD = "e2e-password-not-secret"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp-notify-e2e")
    env = base_env(f"sqlite:///{folder}/e2e.sqlite3")
    prepare_database(env)
    manage(env, "shell", "-v", "0", "-c", "from django.contrib.auth.models import User; "
           f"User.objects.create_superuser('publisher', 'p@example.com', '{PASSWORD}')")
    resource_id = manage(env, "shell", "-v", "0", "-c", "from registry.models import Resource; "
                         f"print(Resource.objects.get(uri='{URI}').pk)").stdout.strip()
    with Server("daphne", env, folder) as srv:
        srv.folder, srv.resource_id, srv.base = folder, resource_id, f"http://127.0.0.1:{srv.port}"
        yield srv


def change_draft(srv: Server, text: str) -> None:
    """An editor's draft change (import without --publish): nothing is announced yet."""
    manage(srv.env, "registry_import", str(changed_fixture(srv.folder, text)))


def publish_in_admin(srv: Server, note: str) -> None:
    """Log in to the admin like a browser and submit the resource's Publish form."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))

    def csrf(page: str) -> str:
        return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)

    def post(url: str, fields: list[tuple[str, str]]) -> str:
        request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(),
                                         headers={"Referer": url})
        with opener.open(request, timeout=10) as response:
            return response.read().decode()

    login = f"{srv.base}/admin/login/?next=/admin/"
    page = opener.open(login, timeout=10).read().decode()
    post(login, [("csrfmiddlewaretoken", csrf(page)), ("username", "publisher"), ("password", PASSWORD),
                 ("next", "/admin/")])
    url = f"{srv.base}/admin/registry/resource/{srv.resource_id}/publish/"
    page = opener.open(url, timeout=10).read().decode()
    post(url, [("csrfmiddlewaretoken", csrf(page)), ("note", note), ("labels", "production"),
               ("override", "on"), ("override_reason", "e2e test of live notifications")])


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_sdk_client_is_notified_of_an_admin_publish_and_rereads_new_content(server, mode):
    import mcp_types as types
    from mcp import Client

    new_text = f"Watched resource content, edition {mode} {time.time()}"
    received: list[str] = []
    got = anyio.Event()

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        if getattr(root, "method", "") == "notifications/resources/updated":
            received.append(str(root.params.uri))
            got.set()

    await anyio.to_thread.run_sync(change_draft, server, new_text)
    async with Client(f"{server.base}/mcp", mode=mode, cache=None, message_handler=on_message,
                      read_timeout_seconds=10) as client:
        before = await client.read_resource(URI)
        assert before.contents[0].text != new_text  # a draft change is not served
        if mode == "legacy":
            await client.session.subscribe_resource(URI)
            await anyio.sleep(0.3)  # let the session's GET stream attach
            await anyio.to_thread.run_sync(publish_in_admin, server, "e2e legacy")
            with anyio.fail_after(10):
                await got.wait()
            assert received == [URI]
        else:
            async with client.listen(resource_subscriptions=[URI]) as subscription:
                await anyio.to_thread.run_sync(publish_in_admin, server, "e2e modern")
                with anyio.fail_after(10):
                    async for event in subscription:
                        assert str(getattr(event, "uri", "")) == URI
                        break
        after = await client.read_resource(URI)
        assert isinstance(after.contents[0], types.TextResourceContents)
        assert after.contents[0].text == new_text
