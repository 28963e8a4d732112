"""/mcp as an OAuth protected resource: challenges, audience, scope, mapping to MCP clients."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async
from django.contrib.auth.models import Group

from oauth import bearer
from oauth.models import GroupDefault, OAuthConnection
from registry.models import McpClient
from registry.serving.clients import create_client
from tests.factories import make_user
from tests.mcp_endpoint import conftest as endpoint_fixtures
from tests.mcp_endpoint.conftest import call_asgi, modern_request
from tests.oauth.conftest import make_token

pytestmark = pytest.mark.django_db(transaction=True)

# The endpoint's fixtures, made visible here by name (another folder's conftest is not).
mcp_app = endpoint_fixtures.mcp_app
registry_data = endpoint_fixtures.registry_data
saved_registry_data = endpoint_fixtures.saved_registry_data

METADATA = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(autouse=True)
def tokens_required(settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False}
    bearer.forget_cached()
    yield
    bearer.forget_cached()


async def list_prompts(mcp_app, token: str | None, *, method: str = "prompts/list"):
    headers, body = modern_request(method)
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return await call_asgi(mcp_app, "POST", headers, body)


async def test_no_token_gets_401_pointing_at_the_resource_metadata(mcp_app, registry_data):
    response = await list_prompts(mcp_app, None)
    assert response.status == 401
    assert response.headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA}", scope="mcp"'


async def test_public_url_setting_decides_the_advertised_metadata_url(mcp_app, registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False, "PUBLIC_URL": "https://prompts.example.com/mcp"}
    response = await list_prompts(mcp_app, None)
    assert ('resource_metadata="https://prompts.example.com/.well-known/oauth-protected-resource/mcp"'
            in response.headers["www-authenticate"])


async def test_unknown_token_gets_401_invalid_token(mcp_app, registry_data):
    response = await list_prompts(mcp_app, "not-a-token-we-issued")
    assert response.status == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="invalid_token", ') and f'resource_metadata="{METADATA}"' in challenge
    assert "error" in response.json()


async def test_token_issued_for_another_resource_is_refused(mcp_app, registry_data):
    user = await sync_to_async(make_user)("Editors")
    token = await sync_to_async(make_token)(user, resource=["https://other.example.com/mcp"])
    response = await list_prompts(mcp_app, token)
    assert response.status == 401 and 'error="invalid_token"' in response.headers["www-authenticate"]
    assert "not issued for this resource" in response.json()["error"]["message"]


async def test_token_without_an_audience_is_refused(mcp_app, registry_data):
    user = await sync_to_async(make_user)("Editors")
    token = await sync_to_async(make_token)(user, resource=[])
    assert (await list_prompts(mcp_app, token)).status == 401


async def test_token_without_the_mcp_scope_gets_403_insufficient_scope(mcp_app, registry_data):
    user = await sync_to_async(make_user)("Editors")
    token = await sync_to_async(make_token)(user, scope="read")
    response = await list_prompts(mcp_app, token)
    assert response.status == 403
    assert response.headers["www-authenticate"].startswith('Bearer error="insufficient_scope", ')
    assert 'scope="mcp"' in response.headers["www-authenticate"]


async def test_expired_token_is_refused(mcp_app, registry_data):
    user = await sync_to_async(make_user)("Editors")
    token = await sync_to_async(make_token)(user, expired=True)
    assert (await list_prompts(mcp_app, token)).status == 401


async def test_valid_token_is_served_as_one_mcp_client_per_application_and_user(mcp_app, registry_data):
    user = await sync_to_async(make_user)("Editors", username="ada")
    token = await sync_to_async(make_token)(user)
    response = await list_prompts(mcp_app, token)
    assert response.status == 200, response.body
    assert {p["name"] for p in response.json()["result"]["prompts"]} >= {"test_simple_prompt"}
    link = await sync_to_async(OAuthConnection.objects.select_related("client", "application").get)(user=user)
    assert link.client.name == "oauth:Test assistant:ada" and link.client.label == "production"
    bearer.forget_cached()
    assert (await list_prompts(mcp_app, token)).status == 200
    assert await sync_to_async(OAuthConnection.objects.count)() == 1


async def test_group_default_binds_label_and_tags_of_the_new_connection(mcp_app, registry_data):
    def setup():
        user = make_user("Editors")
        GroupDefault.objects.create(group=Group.objects.get(name="Editors"), label="production", scope_tags="ops")
        return make_token(user)

    token = await sync_to_async(setup)()
    headers, body = modern_request("resources/list")
    headers["authorization"] = f"Bearer {token}"
    response = await call_asgi(mcp_app, "POST", headers, body)
    stored = [r["uri"] for r in response.json()["result"]["resources"] if not r["uri"].startswith("registry://")]
    assert stored == ["test://secret-notes"]  # the registry's own dynamic resources are listed for everyone
    client = await sync_to_async(McpClient.objects.get)(name__startswith="oauth:")
    assert client.scope_tags == "ops"


async def test_revoking_the_mcp_client_row_stops_its_oauth_tokens(mcp_app, registry_data):
    user = await sync_to_async(make_user)("Editors")
    token = await sync_to_async(make_token)(user)
    assert (await list_prompts(mcp_app, token)).status == 200
    def revoke():
        client = McpClient.objects.get(name__startswith="oauth:")
        client.active = False
        client.save()

    await sync_to_async(revoke)()  # no cache reset: the save itself ends the cached answer
    assert (await list_prompts(mcp_app, token)).status == 401


async def test_deleted_oauth_token_stops_working(mcp_app, registry_data):
    from oauth2_provider.models import AccessToken

    user = await sync_to_async(make_user)("Editors")
    token = await sync_to_async(make_token)(user)
    assert (await list_prompts(mcp_app, token)).status == 200
    await sync_to_async(lambda: AccessToken.objects.all().delete())()  # revocation deletes the row
    assert (await list_prompts(mcp_app, token)).status == 401


async def test_inactive_user_token_is_refused(mcp_app, registry_data):
    def setup():
        user = make_user("Editors")
        user.is_active = False
        user.save()
        return make_token(user)

    assert (await list_prompts(mcp_app, await sync_to_async(setup)())).status == 401


async def test_registration_access_token_does_not_open_mcp(mcp_app, registry_data):
    from django.test import Client

    from tests.oauth.conftest import HOST, register

    _status, app = await sync_to_async(register)(Client(HTTP_HOST=HOST))
    assert (await list_prompts(mcp_app, app["registration_access_token"])).status == 401


async def test_pre_shared_tokens_keep_working_next_to_oauth(mcp_app, registry_data):
    _client, raw = await sync_to_async(create_client)(name="ci-agent")
    assert (await list_prompts(mcp_app, raw)).status == 200
    assert (await list_prompts(mcp_app, raw[:-2] + "xx")).status == 401


async def test_open_streams_end_when_their_oauth_token_is_revoked(registry_data):
    from oauth2_provider.models import AccessToken

    from mcp_endpoint.handlers.identity import authenticate, still_authorised

    user = await sync_to_async(make_user)("Editors")
    token = await sync_to_async(make_token)(user)
    identity = await authenticate(f"Bearer {token}", "http://127.0.0.1:8000/mcp")
    assert identity.oauth_token and await still_authorised(identity)
    await sync_to_async(lambda: AccessToken.objects.all().delete())()
    bearer.forget_cached()
    assert not await still_authorised(identity)
