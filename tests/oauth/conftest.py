"""OAuth test helpers: a registered public client, PKCE pairs, the consent round trip, tokens."""

from __future__ import annotations

import base64
import hashlib
import json
import secrets
from datetime import timedelta
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
from django.test import Client
from django.utils import timezone
from oauth2_provider.models import AccessToken, Application, set_token_value

HOST = "127.0.0.1:8000"
RESOURCE = f"http://{HOST}/mcp"
REDIRECT = "http://127.0.0.1/callback"


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


@pytest.fixture
def web() -> Client:
    return Client(HTTP_HOST=HOST)


def register(web: Client, **metadata) -> tuple[int, dict]:
    body = {"client_name": "Claude", "redirect_uris": [REDIRECT], "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"], **metadata}
    response = web.post("/register", json.dumps(body), content_type="application/json")
    return response.status_code, response.json()


def authorize_params(client_id: str, challenge: str | None, *, method: str = "S256",
                     redirect_uri: str = "http://127.0.0.1:53682/callback", resource: str = RESOURCE) -> dict:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri,
              "state": "st4te", "scope": "mcp", "resource": resource}
    if challenge is not None:
        params.update(code_challenge=challenge, code_challenge_method=method)
    return params


def consent(web: Client, params: dict) -> dict[str, str]:
    """Show the consent page, press Allow, and return the redirect's query parameters."""
    page = web.get("/oauth/authorize/?" + urlencode(params))
    assert page.status_code == 200, page.content[:500]
    form = page.context["form"]
    data = {name: form[name].value() for name in form.fields if form[name].value() is not None}
    data["allow"] = "Allow"
    response = web.post("/oauth/authorize/?" + urlencode(params), data)
    assert response.status_code == 302, response.content[:500]
    location = response["Location"]
    assert location.startswith(params["redirect_uri"])
    return {k: v[0] for k, v in parse_qs(urlsplit(location).query).items()}


def exchange(web: Client, client_id: str, code: str, verifier: str | None, *,
             redirect_uri: str = "http://127.0.0.1:53682/callback", resource: str = RESOURCE):
    data = {"grant_type": "authorization_code", "code": code, "client_id": client_id,
            "redirect_uri": redirect_uri, "resource": resource}
    if verifier is not None:
        data["code_verifier"] = verifier
    return web.post("/oauth/token/", urlencode(data), content_type="application/x-www-form-urlencoded")


def make_token(user, *, resource: list[str] | None = None, scope: str = "mcp", expired: bool = False,
               application: Application | None = None) -> str:
    """An access token straight in the database, as the authorization server would store it."""
    application = application or Application.objects.create(
        name="Test assistant", client_type="public", authorization_grant_type="authorization-code",
        redirect_uris=REDIRECT, user=None)
    raw = secrets.token_urlsafe(30)
    token = AccessToken(user=user, application=application, scope=scope,
                        resource=[RESOURCE] if resource is None else resource,
                        expires=timezone.now() + timedelta(hours=-1 if expired else 1))
    set_token_value(token, raw)
    token.save()
    return raw
