"""The REST API during outages: a database that is down, a content store that is full or
read-only. Every /api/v1/ answer is JSON with a `code` (503 so programs retry), never Django's
HTML error page, whether the failure happens in a view, in authentication or in a middleware."""

from __future__ import annotations

import errno
import json
import os
import re

import pytest
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.test import Client
from rest_framework.test import APIClient

from api.entries import PromptViewSet
from api.urls import router, urlpatterns
from registry.storage import blobs as content
from tests.api.conftest import client_for
from tests.factories import make_resource, release

pytestmark = pytest.mark.django_db

SAMPLE = {"name": "greet", "pk": "1", "label": "staging", "number": "1"}


def _routes() -> list[tuple[str, str]]:
    """(HTTP method, path) of every /api/v1/ route the router and the import/export views serve."""
    out = []
    patterns = [(p.pattern.regex.pattern, getattr(p.callback, "actions", None) or {}) for p in router.urls]
    patterns += [(str(p.pattern), {m: m for m in ("get", "post") if hasattr(p.callback.view_class, m)})
                 for p in urlpatterns if str(p.pattern).startswith("v1/") and hasattr(p.callback, "view_class")]
    for regex, actions in patterns:
        path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: SAMPLE[m.group(1)], regex).strip("^$")
        path = path.removeprefix("v1/")
        if not path:
            continue  # the API root lists links and needs no database
        out += [(method.upper(), f"/api/v1/{path}") for method in actions]
    return sorted(set(out))


ROUTES = _routes()


@pytest.fixture
def database_down(monkeypatch):
    def refused(self, *args, **kwargs):
        raise OperationalError('connection to server at "127.0.0.1", port 5432 failed: Connection refused')

    def down() -> None:
        monkeypatch.setattr(BaseDatabaseWrapper, "_cursor", refused)

    yield down
    monkeypatch.undo()


def _assert_outage(response, code: str = "database_unavailable") -> None:
    assert response.status_code == 503, (response.status_code, response.content[:300])
    assert response["Content-Type"].startswith("application/json"), response["Content-Type"]
    body = response.json()
    assert body["code"] == code and "retry" in body["detail"]
    assert response["Retry-After"]


def test_every_route_is_listed():
    assert len(ROUTES) > 50 and ("PUT", "/api/v1/prompts/greet/rollouts/staging/") in ROUTES
    assert ("POST", "/api/v1/import/") in ROUTES and ("GET", "/api/v1/export/") in ROUTES


@pytest.mark.parametrize("method, path", ROUTES, ids=[f"{m} {p}" for m, p in ROUTES])
def test_every_view_answers_a_database_outage_with_json_503(publisher, database_down, method, path):
    client = APIClient(raise_request_exception=False)
    client.force_authenticate(publisher)  # the view itself meets the outage (permissions, queries)
    database_down()
    response = getattr(client, method.lower())(path, {}, format="json")
    _assert_outage(response)


def test_a_token_that_cannot_be_looked_up_during_an_outage_is_a_json_503(publisher, database_down):
    client = client_for(publisher)
    client.raise_request_exception = False
    database_down()
    _assert_outage(client.get("/api/v1/prompts/"))


def test_a_signed_in_browser_during_an_outage_gets_json_503_from_the_middleware(publisher, database_down):
    """The session and the user are read by middleware, before any view: that failure is the
    handler500's, which answers JSON under /api/."""
    client = Client(raise_request_exception=False)
    client.force_login(publisher)
    database_down()
    _assert_outage(client.get("/api/v1/prompts/"))
    assert client.get("/admin/").status_code == 500  # the admin keeps Django's own page


def test_an_unexpected_error_under_the_api_is_a_json_500(publisher, monkeypatch):
    def broken(self, request, *args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(PromptViewSet, "list", broken)
    client = client_for(publisher)
    client.raise_request_exception = False
    response = client.get("/api/v1/prompts/")
    assert response.status_code == 500 and response.json()["code"] == "server_error"


def _storage_fails(monkeypatch, error: int) -> None:
    """Opening a file in the content store fails with `error` (other files, e.g. temp files, open)."""
    real_open = content.os.open

    def refused(path, *args, **kwargs):
        if "blobs" in str(path):
            raise OSError(error, os.strerror(error))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(content.os, "open", refused)


@pytest.mark.parametrize("error, code", [(errno.ENOSPC, "storage_full"), (errno.EROFS, "storage_read_only")])
def test_a_publish_on_a_full_or_read_only_store_is_a_json_503_and_publishes_nothing(
        as_release_manager, monkeypatch, error, code):
    resource = make_resource("docs://a", text="one")
    release(resource)
    edited = as_release_manager.patch(f"/api/v1/resources/{resource.pk}/", {"text": "two"}, format="json")
    assert edited.status_code == 200
    _storage_fails(monkeypatch, error)
    as_release_manager.raise_request_exception = False
    response = as_release_manager.post(f"/api/v1/resources/{resource.pk}/publish/",
                                       {"note": "v2", "labels": ["production"], "override_reason": "test"},
                                       format="json")
    _assert_outage(response, code)
    assert list(resource.versions.values_list("number", flat=True)) == [1]


def test_a_draft_upload_on_a_full_store_is_a_json_503(as_editor, monkeypatch):
    _storage_fails(monkeypatch, errno.ENOSPC)
    as_editor.raise_request_exception = False
    response = as_editor.post("/api/v1/resources/", {"uri": "docs://new", "name": "new", "mime_type": "image/png",
                                                     "data": "iVBORw0KGgo="}, format="json")
    _assert_outage(response, "storage_full")


def test_an_import_on_a_full_store_is_a_json_503_not_a_problem_list(as_release_manager, monkeypatch):
    _storage_fails(monkeypatch, errno.ENOSPC)
    as_release_manager.raise_request_exception = False
    yaml_text = "resources:\n  - uri: docs://imported\n    name: imported\n    text: hello\n"
    response = as_release_manager.post("/api/v1/import/?publish=true&note=ci", yaml_text,
                                       content_type="application/yaml")
    _assert_outage(response, "storage_full")


def test_publishing_over_a_damaged_object_is_a_409(as_release_manager, content_store):
    resource = make_resource("docs://img", text="", data=b"\x89PNG" + b"x" * 200, mime_type="image/png")
    (content_store / content.object_name(resource.data_sha256)).write_bytes(b"\x89PNG")
    response = as_release_manager.post(f"/api/v1/resources/{resource.pk}/publish/",
                                       {"note": "v1", "labels": ["production"], "override_reason": "test"},
                                       format="json")
    assert response.status_code == 409 and response.json()["code"] == "content_missing"
    assert "is damaged" in response.json()["detail"]


@pytest.fixture
def as_release_manager(release_manager):
    return client_for(release_manager)


@pytest.mark.parametrize("path", ["/oauth/token/", "/oauth/revoke_token/", "/register"])
def test_the_oauth_endpoints_programs_call_answer_an_outage_with_an_oauth_json_503(database_down, path):
    """An SDK refreshing its token during an outage must read "try again", not an HTML page."""
    client = Client(raise_request_exception=False)
    database_down()
    if path == "/register":
        response = client.post(path, json.dumps({
            "client_name": "Claude", "redirect_uris": ["http://127.0.0.1/callback"],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]}),
            content_type="application/json")
    else:
        response = client.post(path, {"grant_type": "refresh_token", "refresh_token": "x", "token": "x",
                                      "client_id": "y"})
    assert response.status_code == 503, (response.status_code, response.content[:300])
    assert response.json()["error"] == "temporarily_unavailable"
