"""OAuth end to end: the official Python SDK's OAuth provider discovers our metadata from the
401, registers itself (RFC 7591), runs authorization code + PKCE S256 with the resource
indicator while the test logs a user in and answers the consent page over HTTP, then lists
prompts from a real daphne server with the token it obtained."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.e2e.servers import Server, base_env, manage, prepare_database

pytestmark = pytest.mark.e2e

PASSWORD = "e2e-password-not-secret"
CALLBACK = "http://127.0.0.1:53682/callback"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    folder = tmp_path_factory.mktemp("mcp-oauth-e2e")
    env = dict(base_env(f"sqlite:///{folder}/e2e.sqlite3"), MCP_ALLOW_ANONYMOUS="0")
    prepare_database(env)
    manage(env, "shell", "-v", "0", "-c", "from django.contrib.auth.models import User; "
           f"User.objects.create_user('ada', 'ada@example.com', '{PASSWORD}', is_staff=True)")
    with Server("daphne", env, folder) as srv:
        srv.base = f"http://127.0.0.1:{srv.port}"
        yield srv


class Storage:
    """In-memory TokenStorage for the SDK provider."""

    def __init__(self) -> None:
        self.tokens = None
        self.client_info = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, client_info) -> None:
        self.client_info = client_info


def _field(page: str, name: str) -> str | None:
    match = re.search(rf'name="{name}"[^>]*value="([^"]*)"', page) or re.search(
        rf'value="([^"]*)"[^>]*name="{name}"', page)
    return match.group(1) if match else None


async def consent_as_user(base: str, authorization_url: str) -> dict[str, str]:
    """What a person does in the browser: log in to the admin, read the consent page, press Allow."""
    import html

    import httpx2

    async with httpx2.AsyncClient(base_url=base, follow_redirects=False, timeout=10) as browser:
        login = await browser.get("/admin/login/")
        await browser.post("/admin/login/", data={
            "csrfmiddlewaretoken": _field(login.text, "csrfmiddlewaretoken"), "username": "ada",
            "password": PASSWORD, "next": "/admin/"}, headers={"Referer": f"{base}/admin/login/"})
        page = await browser.get(authorization_url)
        assert page.status_code == 200, page.text[:800]
        text = page.text
        assert "mcp-e2e-client" in text and "ada" in text and "production" in text
        hidden = {name: html.unescape(value) for name, value in re.findall(
            r'<input type="hidden" name="([^"]+)" value="([^"]*)"', text)}
        hidden["allow"] = "Allow"
        answer = await browser.post(authorization_url, data=hidden, headers={"Referer": authorization_url})
        assert answer.status_code == 302, answer.text[:800]
        location = answer.headers["location"]
    assert location.startswith(CALLBACK)
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


async def test_sdk_oauth_provider_gets_a_token_and_lists_prompts(server):
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

    mcp_url = f"{server.base}/mcp"
    answered: dict[str, str] = {}
    seen: list[str] = []

    async def redirect_handler(url: str) -> None:
        seen.append(url)
        answered.update(await consent_as_user(server.base, url))

    async def callback_handler() -> AuthorizationCodeResult:
        return AuthorizationCodeResult(code=answered["code"], state=answered.get("state"), iss=answered.get("iss"))

    storage = Storage()
    provider = OAuthClientProvider(
        server_url=mcp_url,
        client_metadata=OAuthClientMetadata(client_name="mcp-e2e-client", redirect_uris=[CALLBACK],
                                            grant_types=["authorization_code", "refresh_token"],
                                            response_types=["code"], token_endpoint_auth_method="none",
                                            scope="mcp"),
        storage=storage, redirect_handler=redirect_handler, callback_handler=callback_handler)
    async with (httpx2.AsyncClient(auth=provider, timeout=20) as http,
                Client(streamable_http_client(mcp_url, http_client=http), read_timeout_seconds=20) as client):
        prompts = await client.list_prompts()
    assert "test_simple_prompt" in {p.name for p in prompts.prompts}
    query = parse_qs(urlsplit(seen[0]).query)
    assert query["code_challenge_method"] == ["S256"] and query["resource"] == [mcp_url]
    assert storage.tokens is not None and storage.tokens.access_token
    assert storage.client_info is not None and storage.client_info.client_id
    names = manage(server.env, "shell", "-v", "0", "-c",
                   "from registry.models import McpClient; print([c.name for c in McpClient.objects.all()])").stdout
    assert "oauth:mcp-e2e-client:ada" in names
