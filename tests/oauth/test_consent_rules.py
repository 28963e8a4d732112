"""What the consent step promises: consent is asked whatever the client says, PKCE problems are
refused before anyone is asked, a reused code revokes what it gave, the page says whose claim
the client's name is, and deleting a connection revokes it."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from oauth2_provider.models import AccessToken, RefreshToken

from oauth.models import OAuthConnection
from registry.models import McpClient
from tests.oauth.conftest import RESOURCE, authorize_params, consent, exchange, pkce, register

pytestmark = pytest.mark.django_db


def signed_in_flow(web, editor, name="Claude"):
    _, app = register(web, client_name=name)
    web.force_login(editor)
    verifier, challenge = pkce()
    code = consent(web, authorize_params(app["client_id"], challenge))["code"]
    tokens = exchange(web, app["client_id"], code, verifier).json()
    return app, code, verifier, tokens


def test_approval_prompt_auto_still_shows_the_consent_page(web, editor):
    """The settings force consent; a client asking for approval_prompt=auto while the user holds
    one of its live tokens used to get a code straight away."""
    app, _code, _verifier, _tokens = signed_in_flow(web, editor)
    _verifier, challenge = pkce()
    params = {**authorize_params(app["client_id"], challenge), "approval_prompt": "auto"}
    page = web.get("/oauth/authorize/?" + urlencode(params))
    assert page.status_code == 200 and "code=" not in page.get("Location", "")
    assert 'name="allow"' in page.content.decode()


def test_a_code_challenge_without_its_method_is_refused_before_consent(web, editor):
    _, app = register(web)
    web.force_login(editor)
    params = authorize_params(app["client_id"], pkce()[1])
    del params["code_challenge_method"]
    page = web.get("/oauth/authorize/?" + urlencode(params))
    assert page.status_code == 400 and 'name="allow"' not in page.content.decode()
    assert "S256" in page.content.decode()


def test_a_reused_code_revokes_the_tokens_of_its_first_exchange(web, editor):
    """RFC 6749 §4.1.2: refused, and what the first exchange gave (and its rotations) revoked."""
    app, code, verifier, tokens = signed_in_flow(web, editor)
    rotated = web.post("/oauth/token/", urlencode({"grant_type": "refresh_token", "client_id": app["client_id"],
                                                   "refresh_token": tokens["refresh_token"]}),
                       content_type="application/x-www-form-urlencoded")
    assert rotated.status_code == 200
    assert AccessToken.objects.filter(user=editor).exists()
    again = exchange(web, app["client_id"], code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    assert not AccessToken.objects.filter(user=editor).exists()
    assert not RefreshToken.objects.filter(user=editor, revoked__isnull=True).exists()
    refresh = web.post("/oauth/token/", urlencode({"grant_type": "refresh_token", "client_id": app["client_id"],
                                                   "refresh_token": rotated.json()["refresh_token"]}),
                       content_type="application/x-www-form-urlencoded")
    assert refresh.status_code == 400


def test_a_wrong_code_revokes_nothing(web, editor):
    app, _code, verifier, _tokens = signed_in_flow(web, editor)
    assert exchange(web, app["client_id"], "not-a-code", verifier).status_code == 400
    assert AccessToken.objects.filter(user=editor).exists()


def test_the_consent_page_says_the_name_is_the_clients_own_claim_and_where_it_returns(web, editor):
    _, app = register(web, client_name="Claude")
    web.force_login(editor)
    page = web.get("/oauth/authorize/?" + urlencode(authorize_params(app["client_id"], pkce()[1])))
    html = page.content.decode()
    assert "“Claude” is the name this client gave itself; the registry has not checked it" in html
    assert "returns to <code>127.0.0.1:53682</code>" in html


def test_deleting_a_connections_mcp_client_revokes_the_grant(web, editor):
    """The next token use used to create a fresh row with the group's defaults."""
    from oauth import bearer

    _app, _code, _verifier, tokens = signed_in_flow(web, editor)
    bearer.resolve(tokens["access_token"], RESOURCE)  # first use: the connection's row is made
    client = McpClient.objects.get(oauth_connection__user=editor)
    client.delete()
    bearer.forget_cached()
    with pytest.raises(bearer.OAuthRefusal):
        bearer.resolve(tokens["access_token"], RESOURCE)
    assert not McpClient.objects.filter(name__startswith="oauth:").exists()
    assert not OAuthConnection.objects.exists()
    assert not RefreshToken.objects.filter(user=editor, revoked__isnull=True).exists()
    refresh = web.post("/oauth/token/", urlencode({"grant_type": "refresh_token", "client_id": _app["client_id"],
                                                   "refresh_token": tokens["refresh_token"]}),
                       content_type="application/x-www-form-urlencoded")
    assert refresh.status_code == 400
