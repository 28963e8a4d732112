"""The authorization server: metadata, registration, consent, PKCE, codes, refresh, revocation."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from oauth2_provider.models import AccessToken

from tests.oauth.conftest import RESOURCE, authorize_params, consent, exchange, pkce, register

pytestmark = pytest.mark.django_db

ORIGIN = "http://127.0.0.1:8000"


def test_authorization_server_metadata_offers_only_code_with_s256_and_registration(web):
    doc = web.get("/.well-known/oauth-authorization-server").json()
    assert doc["issuer"] == ORIGIN
    assert doc["authorization_endpoint"] == f"{ORIGIN}/oauth/authorize/"
    assert doc["token_endpoint"] == f"{ORIGIN}/oauth/token/"
    assert doc["registration_endpoint"] == f"{ORIGIN}/oauth/register/"
    assert doc["revocation_endpoint"] == f"{ORIGIN}/oauth/revoke_token/"
    assert doc["code_challenge_methods_supported"] == ["S256"]
    assert doc["response_types_supported"] == ["code"]
    assert set(doc["grant_types_supported"]) == {"authorization_code", "refresh_token"}
    assert doc["authorization_response_iss_parameter_supported"] is True
    assert "none" in doc["token_endpoint_auth_methods_supported"]
    assert doc["scopes_supported"] == ["mcp"]


@pytest.mark.parametrize("path", ["/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"])
def test_protected_resource_metadata_names_the_mcp_url_and_this_server(web, path):
    response = web.get(path)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    doc = response.json()
    assert doc["resource"] == RESOURCE
    assert doc["authorization_servers"] == [ORIGIN]
    assert doc["scopes_supported"] == ["mcp"] and doc["bearer_methods_supported"] == ["header"]


def test_protected_resource_metadata_follows_public_url(web, settings):
    settings.MCP_ENDPOINT = {"PUBLIC_URL": "https://prompts.example.com/mcp"}
    assert web.get("/.well-known/oauth-protected-resource/mcp").json()["resource"] == "https://prompts.example.com/mcp"


@pytest.mark.parametrize("path", ["/.well-known/openid-configuration", "/.well-known/oauth-protected-resource/other",
                                  "/oauth/nothing-here", "/oauth/authorize/extra"])
def test_unknown_oauth_and_well_known_paths_answer_json_404(web, path):
    response = web.get(path)
    assert response.status_code == 404 and response.json()["error"] == "not_found"


@pytest.mark.parametrize("path", ["/register", "/oauth/register", "/oauth/register/"])
def test_dynamic_registration_creates_a_public_client(web, path):
    body = {"client_name": "mcp-remote", "redirect_uris": ["http://localhost:3334/oauth/callback"],
            "token_endpoint_auth_method": "none", "grant_types": ["authorization_code", "refresh_token"]}
    response = web.post(path, json.dumps(body), content_type="application/json")
    assert response.status_code == 201, response.content
    data = response.json()
    assert data["client_id"] and "client_secret" not in data
    assert data["token_endpoint_auth_method"] == "none" and data["client_name"] == "mcp-remote"


@pytest.mark.parametrize("metadata, error", [
    ({"grant_types": ["client_credentials"]}, "invalid_client_metadata"),
    ({"grant_types": ["password"]}, "invalid_client_metadata"),
    ({"redirect_uris": ["http://evil.example.com/cb"]}, "invalid_redirect_uri"),
    ({"redirect_uris": ["https://app.example.com/cb#frag"]}, "invalid_redirect_uri"),
])
def test_registration_refuses_what_this_server_does_not_issue(web, metadata, error):
    status, data = register(web, **metadata)
    assert status == 400 and data["error"] == error and data["error_description"]


def test_registration_refuses_a_body_that_is_not_json(web):
    response = web.post("/register", "nope", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"


def test_consent_page_is_admin_styled_and_names_client_user_and_label(web, editor):
    _, app = register(web, client_name="Claude connector")
    web.force_login(editor)
    _verifier, challenge = pkce()
    page = web.get("/oauth/authorize/?" + urlencode(authorize_params(app["client_id"], challenge)))
    html = page.content.decode()
    assert page.status_code == 200
    assert "admin/base_site.html" in [t.name for t in page.templates]
    assert "Claude connector" in html and editor.username in html
    assert "<strong>production</strong> label" in html and "127.0.0.1:53682" in html
    assert RESOURCE in html


def test_authorize_without_login_sends_to_the_admin_login(web):
    _, app = register(web)
    _verifier, challenge = pkce()
    response = web.get("/oauth/authorize/?" + urlencode(authorize_params(app["client_id"], challenge)))
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


def test_code_flow_with_pkce_binds_the_resource_and_returns_iss(web, editor):
    _, app = register(web)
    web.force_login(editor)
    verifier, challenge = pkce()
    query = consent(web, authorize_params(app["client_id"], challenge))  # registered port-less, any port used
    assert query["state"] == "st4te" and query["iss"] == ORIGIN
    response = exchange(web, app["client_id"], query["code"], verifier)
    assert response.status_code == 200, response.content
    tokens = response.json()
    assert tokens["scope"] == "mcp" and tokens["refresh_token"]
    stored = AccessToken.objects.get(user=editor)
    assert stored.resource == [RESOURCE] and stored.token == ""  # audience bound; only the hash is stored


def test_reused_authorization_code_is_refused(web, editor):
    _, app = register(web)
    web.force_login(editor)
    verifier, challenge = pkce()
    code = consent(web, authorize_params(app["client_id"], challenge))["code"]
    assert exchange(web, app["client_id"], code, verifier).status_code == 200
    again = exchange(web, app["client_id"], code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


def test_token_request_without_the_pkce_verifier_is_refused(web, editor):
    _, app = register(web)
    web.force_login(editor)
    _verifier, challenge = pkce()
    code = consent(web, authorize_params(app["client_id"], challenge))["code"]
    response = exchange(web, app["client_id"], code, None)
    assert response.status_code == 400 and response.json()["error"] in ("invalid_request", "invalid_grant")
    assert not AccessToken.objects.filter(user=editor).exists()


def test_wrong_pkce_verifier_is_refused(web, editor):
    _, app = register(web)
    web.force_login(editor)
    _verifier, challenge = pkce()
    code = consent(web, authorize_params(app["client_id"], challenge))["code"]
    assert exchange(web, app["client_id"], code, pkce()[0]).status_code == 400


def test_authorization_without_pkce_is_refused(web, editor):
    _, app = register(web)
    web.force_login(editor)
    response = web.get("/oauth/authorize/?" + urlencode(authorize_params(app["client_id"], None)))
    assert "code=" not in response.get("Location", "")
    assert response.status_code in (302, 400)
    if response.status_code == 302:
        assert "error=invalid_request" in response["Location"]


def test_plain_pkce_is_refused_before_consent_and_when_posted(web, editor):
    from oauth2_provider.models import Grant

    _, app = register(web)
    web.force_login(editor)
    verifier = pkce()[0]
    params = authorize_params(app["client_id"], verifier, method="plain")
    page = web.get("/oauth/authorize/?" + urlencode(params))
    assert page.status_code == 400 and "S256" in page.content.decode()
    crafted = {"client_id": app["client_id"], "redirect_uri": params["redirect_uri"], "response_type": "code",
               "state": "st4te", "scope": "mcp", "code_challenge": verifier, "code_challenge_method": "plain",
               "allow": "Allow"}
    response = web.post("/oauth/authorize/?" + urlencode(params), crafted)
    assert "code=" not in response.get("Location", "")
    assert not Grant.objects.exists()


def test_unregistered_redirect_uri_is_refused_without_redirecting(web, editor):
    _, app = register(web)
    web.force_login(editor)
    _verifier, challenge = pkce()
    params = authorize_params(app["client_id"], challenge, redirect_uri="http://127.0.0.1:5000/elsewhere")
    response = web.get("/oauth/authorize/?" + urlencode(params))
    assert response.status_code == 400 or "Location" not in response


def test_refresh_rotates_and_keeps_the_audience_and_revocation_ends_it(web, editor):
    _, app = register(web)
    web.force_login(editor)
    verifier, challenge = pkce()
    code = consent(web, authorize_params(app["client_id"], challenge))["code"]
    first = exchange(web, app["client_id"], code, verifier).json()
    refreshed = web.post("/oauth/token/", urlencode({"grant_type": "refresh_token", "client_id": app["client_id"],
                                                     "refresh_token": first["refresh_token"]}),
                         content_type="application/x-www-form-urlencoded")
    assert refreshed.status_code == 200, refreshed.content
    second = refreshed.json()
    assert second["refresh_token"] != first["refresh_token"]
    assert AccessToken.objects.get(user=editor).resource == [RESOURCE]
    reuse = web.post("/oauth/token/", urlencode({"grant_type": "refresh_token", "client_id": app["client_id"],
                                                 "refresh_token": first["refresh_token"]}),
                     content_type="application/x-www-form-urlencoded")
    assert reuse.status_code == 400
    revoked = web.post("/oauth/revoke_token/",
                       urlencode({"token": second["access_token"], "client_id": app["client_id"]}),
                       content_type="application/x-www-form-urlencoded")
    assert revoked.status_code == 200
    assert not AccessToken.objects.filter(user=editor).exists()


def test_denied_consent_redirects_with_access_denied_and_issues_nothing(web, editor):
    _, app = register(web)
    web.force_login(editor)
    _verifier, challenge = pkce()
    params = authorize_params(app["client_id"], challenge)
    page = web.get("/oauth/authorize/?" + urlencode(params))
    form = page.context["form"]
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    response = web.post("/oauth/authorize/?" + urlencode(params), data)
    assert response.status_code == 302 and "error=access_denied" in response["Location"]
    assert not AccessToken.objects.filter(user=editor).exists()


def test_authorization_for_another_resource_is_refused_as_invalid_target(web, editor):
    _, app = register(web)
    web.force_login(editor)
    _verifier, challenge = pkce()
    params = authorize_params(app["client_id"], challenge, resource="https://other.example.com/mcp")
    page = web.get("/oauth/authorize/?" + urlencode(params))
    assert page.status_code == 400 and "invalid_target" in page.content.decode()


def test_authorization_without_a_resource_is_bound_to_the_mcp_endpoint(web, editor):
    _, app = register(web)
    web.force_login(editor)
    verifier, challenge = pkce()
    params = authorize_params(app["client_id"], challenge)
    del params["resource"]
    code = consent(web, params)["code"]
    data = {"grant_type": "authorization_code", "code": code, "client_id": app["client_id"],
            "redirect_uri": params["redirect_uri"], "code_verifier": verifier}
    response = web.post("/oauth/token/", urlencode(data), content_type="application/x-www-form-urlencoded")
    assert response.status_code == 200, response.content
    assert AccessToken.objects.get(user=editor).resource == [RESOURCE]


def test_consent_page_policy_lets_the_form_redirect_to_the_clients_callback(web, editor):
    _, app = register(web)
    web.force_login(editor)
    _verifier, challenge = pkce()
    page = web.get("/oauth/authorize/?" + urlencode(authorize_params(app["client_id"], challenge)))
    policy = page["Content-Security-Policy"]
    form_action = next(d for d in policy.split(";") if d.strip().startswith("form-action"))
    assert "'self'" in form_action and "http://127.0.0.1:53682" in form_action


def test_registration_update_cannot_switch_to_another_grant_type(web):
    _, app = register(web)
    body = {"client_name": "Claude", "redirect_uris": ["http://127.0.0.1/callback"],
            "token_endpoint_auth_method": "client_secret_basic", "grant_types": ["client_credentials"]}
    response = web.put(f"/oauth/register/{app['client_id']}/", json.dumps(body), content_type="application/json",
                       HTTP_AUTHORIZATION=f"Bearer {app['registration_access_token']}")
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"
    from oauth2_provider.models import Application
    assert Application.objects.get(client_id=app["client_id"]).authorization_grant_type == "authorization-code"


def test_plain_http_callback_to_a_remote_host_is_refused_whoever_registered_it(web, editor):
    from oauth2_provider.models import Application, Grant

    app = Application.objects.create(name="Admin-made", client_type="public",
                                      authorization_grant_type="authorization-code",
                                      redirect_uris="http://intranet.example.com/cb")
    web.force_login(editor)
    _verifier, challenge = pkce()
    params = authorize_params(app.client_id, challenge, redirect_uri="http://intranet.example.com/cb")
    page = web.get("/oauth/authorize/?" + urlencode(params))
    assert page.status_code == 400 and "plain http" in page.content.decode()
    crafted = {"client_id": app.client_id, "redirect_uri": params["redirect_uri"], "response_type": "code",
               "state": "s", "scope": "mcp", "code_challenge": challenge, "code_challenge_method": "S256",
               "resource": RESOURCE, "allow": "Allow"}
    response = web.post("/oauth/authorize/?" + urlencode(params), crafted)
    assert response.status_code == 400 and not Grant.objects.exists()
