"""Content the catalog loads on demand: errors for missing bytes, served from the bounded cache."""

from __future__ import annotations

import json

from asgiref.sync import sync_to_async

from registry.models import ResourceVersion
from registry.storage import blobs as content
from registry.storage import cache as content_cache
from tests.mcp_endpoint.conftest import call_asgi, modern_request


def _lose_content(store_root, uri: str) -> str:
    version = ResourceVersion.objects.filter(entry__uri=uri).order_by("-number").first()
    sha = version.snapshot["sha256"]
    (store_root / content.object_name(sha)).unlink()
    return sha


async def test_reading_a_resource_whose_bytes_are_missing_is_an_internal_error_with_a_message(
        mcp_app, registry_data, anonymous_allowed, content_store):
    sha = await sync_to_async(_lose_content)(content_store, "test://static-text")
    headers, body = modern_request("resources/read", {"uri": "test://static-text"})
    response = await call_asgi(mcp_app, "POST", headers, body)
    assert response.status == 200
    error = response.json()["error"]
    assert error["code"] == -32603
    assert "missing from the content store" in error["message"] and error["data"] == {"sha256": sha}


async def test_a_read_resource_is_served_again_from_the_content_cache(mcp_app, registry_data, anonymous_allowed):
    from mcp_endpoint.handlers.catalogs import reset_caches

    headers, body = modern_request("resources/read", {"uri": "test://static-text"})
    first = (await call_asgi(mcp_app, "POST", headers, body)).json()["result"]["contents"][0]
    hits = content_cache.cache.stats()["hits"]
    reset_caches()  # not the serialised-result cache: the content cache answers
    second = (await call_asgi(mcp_app, "POST", headers, body)).json()["result"]["contents"][0]
    assert first == second and first["text"]
    assert content_cache.cache.stats()["hits"] > hits
    assert json.dumps(first)  # plain MCP contents: text, no hash
    assert "sha256" not in first


def _damage_content(store_root, uri: str) -> str:
    version = ResourceVersion.objects.filter(entry__uri=uri).order_by("-number").first()
    sha = version.snapshot["sha256"]
    path = store_root / content.object_name(sha)
    path.write_bytes(path.read_bytes()[:10])  # a write cut short
    content_cache.cache.clear()
    return sha


async def test_reading_a_resource_whose_bytes_are_damaged_is_a_logged_error_never_a_wrong_text(
        mcp_app, registry_data, anonymous_allowed, content_store, caplog, monkeypatch):
    monkeypatch.setattr(content, "_logged", {})  # once a minute per object: start afresh
    sha = await sync_to_async(_damage_content)(content_store, "test://static-text")
    headers, body = modern_request("resources/read", {"uri": "test://static-text"})
    with caplog.at_level("ERROR", logger="registry.storage.blobs"):
        response = await call_asgi(mcp_app, "POST", headers, body)
    error = response.json()["error"]
    assert error["code"] == -32603 and error["data"] == {"sha256": sha}
    assert "the stored bytes are damaged" in error["message"]
    assert any(sha in r.getMessage() and "does not match its hash" in r.getMessage() for r in caplog.records)
