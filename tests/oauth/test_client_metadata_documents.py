"""Client ID Metadata Documents: an https URL as client_id, resolved by fetching its document."""

from __future__ import annotations

from urllib.parse import urlencode

import pytest
from django.conf import settings as django_settings
from oauth2_provider.models import AccessToken, Application

from tests.oauth.conftest import RESOURCE, authorize_params, consent, exchange, pkce

pytestmark = pytest.mark.django_db

CLIENT_ID = "https://assistant.example.com/oauth/client-metadata.json"
FETCHED: list[str] = []


class DocumentFetcher:
    """Stands in for the network: serves one client's metadata document (the real fetcher
    refuses non-public addresses, so no local server can play the client's host)."""

    def fetch(self, client_id: str) -> tuple[dict, int]:
        FETCHED.append(client_id)
        return {"client_id": client_id, "client_name": "Hosted assistant",
                "redirect_uris": ["https://assistant.example.com/callback"],
                "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
                "token_endpoint_auth_method": "none"}, 600


@pytest.fixture
def documents(settings):
    settings.OAUTH2_PROVIDER = {**django_settings.OAUTH2_PROVIDER,
                                "CIMD_METADATA_FETCHER": f"{__name__}.DocumentFetcher"}
    FETCHED.clear()


def test_metadata_advertises_client_id_metadata_documents(web):
    assert web.get("/.well-known/oauth-authorization-server").json()["client_id_metadata_document_supported"] is True


def test_url_client_id_is_fetched_and_gets_a_token_without_registration(web, editor, documents):
    web.force_login(editor)
    verifier, challenge = pkce()
    callback = "https://assistant.example.com/callback"
    params = authorize_params(CLIENT_ID, challenge, redirect_uri=callback)
    page = web.get("/oauth/authorize/?" + urlencode(params))
    assert page.status_code == 200 and "Hosted assistant" in page.content.decode()
    query = consent(web, params)
    response = exchange(web, CLIENT_ID, query["code"], verifier, redirect_uri=callback)
    assert response.status_code == 200, response.content
    assert FETCHED and FETCHED[0] == CLIENT_ID
    assert Application.objects.get(client_id=CLIENT_ID).client_type == "public"
    assert AccessToken.objects.get(user=editor).resource == [RESOURCE]


def test_url_client_id_with_an_unlisted_redirect_is_refused(web, editor, documents):
    web.force_login(editor)
    _verifier, challenge = pkce()
    params = authorize_params(CLIENT_ID, challenge, redirect_uri="https://evil.example.com/callback")
    response = web.get("/oauth/authorize/?" + urlencode(params))
    assert "code=" not in response.get("Location", "") and response.status_code != 302
