"""Anonymous OAuth endpoints cannot be used to burn CPU or fill the database: registrations and
token requests are throttled per address, public clients store no hashed secret, a registration's
metadata and redirect URIs are bounded (one URI is exactly one URI), unused registrations are
pruned."""

from __future__ import annotations

import json
from datetime import timedelta
from urllib.parse import urlencode

import pytest
from django.core.management import call_command
from django.utils import timezone
from oauth2_provider.models import Application

from oauth.models import OAuthConnection
from oauth.registrations import prune_unused
from registry.models import McpClient
from tests.oauth.conftest import REDIRECT, register

pytestmark = pytest.mark.django_db


def test_a_public_client_is_registered_without_hashing_a_secret(web, monkeypatch):
    """Each anonymous POST /register hashed a generated secret with a million PBKDF2 iterations
    (1.9 s of CPU) although a public client never presents one."""
    import oauth2_provider.models

    def no_hashing(*args, **kwargs):
        raise AssertionError("a public client's secret was hashed")

    monkeypatch.setattr(oauth2_provider.models, "make_password", no_hashing)
    status, data = register(web)
    assert status == 201, data
    app = Application.objects.get(client_id=data["client_id"])
    assert app.client_secret == "" and not app.hash_client_secret and "client_secret" not in data


def test_registrations_are_throttled_per_address(web, settings):
    settings.OAUTH_REGISTRATIONS_PER_HOUR = 3
    for _ in range(3):
        assert register(web)[0] == 201
    response = web.post("/register", json.dumps({"redirect_uris": [REDIRECT]}), content_type="application/json")
    assert response.status_code == 429 and int(response["Retry-After"]) > 0
    assert response.json()["error"] == "temporarily_unavailable"
    other = web.post("/register", json.dumps({"client_name": "x", "redirect_uris": [REDIRECT],
                                              "token_endpoint_auth_method": "none"}),
                     content_type="application/json", REMOTE_ADDR="192.0.2.7")
    assert other.status_code == 201
    assert Application.objects.count() == 4


@pytest.mark.parametrize("metadata, reason", [
    ({"redirect_uris": [f"http://127.0.0.1:{port}/cb" for port in range(1000, 1011)]}, "at most 10 redirect_uris"),
    ({"redirect_uris": ["https://app.example.com/" + "a" * 2000]}, "at most 2000 are allowed"),
    ({"redirect_uris": ["https://app.example.com/cb\nhttp://evil.example.com/cb"]}, "exactly one URI"),
    ({"redirect_uris": ["https://app.example.com/cb http://evil.example.com/cb"]}, "exactly one URI"),
    ({"redirect_uris": ["https://app.example.com/cb\thttp://evil.example.com/cb"]}, "exactly one URI"),
    ({"redirect_uris": ["https://app.example.com/caf\u00e9"]}, "exactly one URI"),
    ({"redirect_uris": ["/relative/callback"]}, "not an absolute URI"),
    ({"redirect_uris": ["https:///no-host"]}, "not an absolute URI"),
])
def test_redirect_uris_are_bounded_and_each_is_exactly_one_absolute_uri(web, metadata, reason):
    status, data = register(web, **metadata)
    assert status == 400 and data["error"] == "invalid_redirect_uri" and reason in data["error_description"]
    assert not Application.objects.exists()


def test_smuggled_redirect_uris_never_become_a_registered_callback(web):
    register(web, redirect_uris=["https://app.example.com/cb\nhttp://evil.example.com/cb"])
    assert not Application.objects.filter(redirect_uris__contains="evil").exists()


def test_metadata_over_the_size_limit_is_refused(web):
    status, data = register(web, client_uri="https://app.example.com/", software_id="x" * 20_000)
    assert status == 400 and data["error"] == "invalid_client_metadata" and "16,384 bytes" in data["error_description"]


def confidential_client() -> Application:
    return Application.objects.create(name="Server app", client_type="confidential", client_secret="right",
                                      authorization_grant_type="authorization-code", redirect_uris=REDIRECT)


def revoke(web, client_id: str, secret: str, **extra):
    return web.post("/oauth/revoke_token/", urlencode({"token": "nope", "client_id": client_id,
                                                       "client_secret": secret}),
                    content_type="application/x-www-form-urlencoded", **extra)


@pytest.mark.parametrize("path", ["/oauth/token/", "/oauth/revoke_token/"])
def test_wrong_client_secrets_stop_being_checked_after_the_failure_limit(web, settings, monkeypatch, path):
    """Each wrong secret costs a hash; past the limit the address is refused before any."""
    import oauth2_provider.oauth2_validators as validators

    settings.OAUTH_CLIENT_AUTH_FAILURES = 3
    app = confidential_client()
    checked = []
    real_check = validators.check_password
    monkeypatch.setattr(validators, "check_password", lambda *a, **k: checked.append(1) or real_check(*a, **k))
    data = {"grant_type": "authorization_code", "code": "x", "token": "x", "client_id": app.client_id,
            "client_secret": "wrong", "redirect_uri": REDIRECT}
    statuses = [web.post(path, urlencode(data), content_type="application/x-www-form-urlencoded").status_code
                for _ in range(5)]
    assert statuses[:3] == [401, 401, 401] and statuses[3:] == [429, 429]
    assert len(checked) == 3
    elsewhere = web.post(path, urlencode(data), content_type="application/x-www-form-urlencoded",
                         REMOTE_ADDR="192.0.2.8")
    assert elsewhere.status_code == 401  # another address is not locked out


def test_token_requests_are_rate_limited_per_address(web, settings):
    settings.OAUTH_TOKEN_REQUESTS_PER_MINUTE = 2
    data = urlencode({"grant_type": "refresh_token", "refresh_token": "x", "client_id": "nobody"})
    statuses = [web.post("/oauth/token/", data, content_type="application/x-www-form-urlencoded").status_code
                for _ in range(3)]
    assert statuses[2] == 429 and 429 not in statuses[:2]


def test_registrations_nobody_used_are_pruned_and_used_or_manual_ones_kept(web, editor):
    unused = Application.objects.get(client_id=register(web, client_name="never used")[1]["client_id"])
    used = Application.objects.get(client_id=register(web, client_name="connected")[1]["client_id"])
    recent = Application.objects.get(client_id=register(web, client_name="just now")[1]["client_id"])
    manual = Application.objects.create(name="admin-made", client_type="public", redirect_uris=REDIRECT,
                                        authorization_grant_type="authorization-code")
    client = McpClient.objects.create(name="oauth:connected:editor")
    OAuthConnection.objects.create(application=used, user=editor, client=client)
    long_ago = timezone.now() - timedelta(hours=25)
    Application.objects.filter(pk__in=[unused.pk, used.pk, manual.pk]).update(created=long_ago)
    assert prune_unused() == 1
    assert set(Application.objects.values_list("pk", flat=True)) == {used.pk, recent.pk, manual.pk}
    call_command("oauth_prune_registrations", "--hours", "0")  # the command; "just now" is unused too
    assert set(Application.objects.values_list("pk", flat=True)) == {used.pk, manual.pk}


def test_deeply_nested_metadata_within_the_size_limit_is_refused_not_a_crash(web):
    response = web.post("/register", b"[" * 8000 + b"]" * 8000, content_type="application/json")
    assert response.status_code == 400 and response.json()["error"] == "invalid_client_metadata"
