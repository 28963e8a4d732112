"""Fixtures for the MCP endpoint: a published registry (the conformance fixtures plus paging
data), anonymous access switched on, request helpers for both wire generations, and an
ASGI client."""

from __future__ import annotations

import json
from typing import Any

import pytest
from channels.testing import ApplicationCommunicator

from mcp_endpoint.handlers.catalogs import reset_caches
from mcp_endpoint.notify.hub import hub as notification_hub
from mcp_endpoint.transport.consumers import McpHttpApp
from mcp_endpoint.wire.sessions import store
from registry.release import services
from tests.factories import PNG_1X1, make_prompt, make_resource, make_template, make_user
from tests.saved_data import SavedData

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


@pytest.fixture(autouse=True)
def _fresh_endpoint_caches():
    reset_caches()
    store.clear_cache()
    notification_hub.__init__()  # listeners and catalogs of an earlier test's event loop
    yield
    reset_caches()
    store.clear_cache()


@pytest.fixture
def anonymous_allowed(settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True}
    settings.ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", "testserver"]
    return settings


def publish(entry, user):
    services.publish(entry, acting_user=user, note="test fixture", override_reason="test fixture data")
    return entry


def build_registry_data(_user: Any = None) -> Any:
    """The conformance fixtures (shared/conformance/fixtures.md), published to production by a
    new superuser (returned)."""
    user = make_user(None)
    publish(make_prompt("test_simple_prompt", description="A simple prompt", arguments=[],
                        messages=[{"role": "user", "kind": "text", "text": "This is a simple prompt for testing."}]),
            user)
    publish(make_prompt(
        "test_prompt_with_arguments", description="A prompt with arguments", title="With arguments",
        arguments=[{"name": "arg1", "description": "First test argument", "required": True,
                    "suggestions": "test-one\ntest-two\nother"},
                   {"name": "arg2", "description": "Second test argument", "required": True}],
        messages=[{"role": "user", "kind": "text",
                   "text": "Prompt with arguments: arg1='{{ arg1 }}', arg2='{{ arg2 }}'"}]), user)
    publish(make_prompt(
        "test_prompt_with_embedded_resource", description="Embeds a resource",
        arguments=[{"name": "resourceUri", "description": "URI of the resource to embed", "required": True}],
        messages=[{"role": "user", "kind": "resource", "uri": "{{ resourceUri }}", "mime_type": "text/plain",
                   "text": "Embedded resource content for testing."},
                  {"role": "user", "kind": "text", "text": "Please process the embedded resource above."}]), user)
    publish(make_prompt("test_prompt_with_image", description="An image prompt", arguments=[],
                        messages=[{"role": "user", "kind": "image", "mime_type": "image/png", "data": PNG_1X1},
                                  {"role": "user", "kind": "text", "text": "Please analyze the image above."}]),
            user)
    publish(make_prompt("test_prompt_with_link", description="Links a resource", arguments=[],
                        messages=[{"role": "user", "kind": "resource_link", "uri": "test://static-text",
                                   "link_name": "static-text"}]), user)
    publish(make_resource("test://static-text", name="static-text", title="Static text",
                          description="A static text resource",
                          text="This is the content of the static text resource."), user)
    publish(make_resource("test://static-binary", name="static-binary", description="A PNG",
                          mime_type="image/png", text="", data=PNG_1X1), user)
    publish(make_resource("test://watched-resource", name="watched-resource", description="Watched",
                          text="Watched resource content"), user)
    publish(make_resource("test://secret-notes", name="secret-notes", description="Only for the ops scope",
                          text="ops only", tags="ops"), user)
    publish(make_template("test://template/{id}/data", name="template", mime_type="application/json",
                          body='{"id": "{{ id }}", "templateTest": true, "data": "Data for ID: {{ id }}"}'), user)
    return user


def build_many_prompts(user: Any) -> Any:
    """250 extra prompts so prompts/list needs three pages of 100."""
    for i in range(250):
        publish(make_prompt(f"bulk-{i:04d}", description=f"Bulk prompt {i}", arguments=[],
                            messages=[{"role": "user", "kind": "text", "text": f"bulk {i}"}]), user)
    return user


@pytest.fixture(scope="session")
def saved_registry_data(django_db_setup, django_db_blocker, tmp_path_factory) -> SavedData:
    """`build_registry_data`, run once per session."""
    with django_db_blocker.unblock():
        return SavedData.build(tmp_path_factory.mktemp("registry-data"), build_registry_data)


@pytest.fixture(scope="session")
def saved_many_prompts(saved_registry_data, django_db_blocker, tmp_path_factory) -> SavedData:
    """`build_many_prompts` on top of `build_registry_data`, run once per session."""
    with django_db_blocker.unblock():
        return SavedData.build(tmp_path_factory.mktemp("many-prompts"), build_many_prompts, base=saved_registry_data)


@pytest.fixture
def registry_data(transactional_db, saved_registry_data, content_store):
    """The conformance fixtures, published to production; the publishing superuser."""
    return saved_registry_data.load(content_store)


@pytest.fixture
def many_prompts(registry_data, saved_many_prompts, content_store):
    """The conformance fixtures and 250 extra prompts; the publishing superuser."""
    return saved_many_prompts.load(content_store)


def modern_meta(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    meta = {"io.modelcontextprotocol/protocolVersion": version,
            "io.modelcontextprotocol/clientCapabilities": {}}
    meta.update(extra)
    return meta


def modern_request(method: str, params: dict[str, Any] | None = None, *, rid: Any = 1,
                   version: str = MODERN, meta: bool = True) -> tuple[dict[str, str], bytes]:
    """(headers, body) of a well-formed 2026-07-28 request."""
    params = dict(params or {})
    if meta:
        params["_meta"] = modern_meta(version)
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "mcp-protocol-version": version, "mcp-method": method, "host": "127.0.0.1:8000"}
    if method in ("prompts/get", "tools/call") and "name" in params:
        headers["mcp-name"] = params["name"]
    if method == "resources/read" and "uri" in params:
        headers["mcp-name"] = params["uri"]
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode()
    return headers, body


def legacy_headers(session_id: str | None = None, version: str | None = LEGACY) -> dict[str, str]:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream",
               "host": "127.0.0.1:8000"}
    if version:
        headers["mcp-protocol-version"] = version
    if session_id:
        headers["mcp-session-id"] = session_id
    return headers


def rpc(method: str, params: dict[str, Any] | None = None, rid: Any = 1) -> bytes:
    msg: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if rid is not None:
        msg["id"] = rid
    if params is not None:
        msg["params"] = params
    return json.dumps(msg).encode()


class AsgiResponse:
    def __init__(self, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status = status
        self.headers = {k.decode().lower(): v.decode() for k, v in headers}
        self.body = body

    def json(self) -> Any:
        return json.loads(self.body)

    def sse_messages(self) -> list[Any]:
        out = []
        for block in self.body.decode().split("\n\n"):
            data = [ln[5:].strip() for ln in block.split("\n") if ln.startswith("data:")]
            if data:
                out.append(json.loads("\n".join(data)))
        return out


def asgi_scope(method: str, headers: dict[str, str], path: str = "/mcp") -> dict[str, Any]:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8000),
    }


async def call_asgi(app: Any, method: str, headers: dict[str, str], body: bytes = b"",
                    path: str = "/mcp", timeout: float = 5) -> AsgiResponse:
    """Drive an ASGI app to completion for one request (Channels' ApplicationCommunicator)."""
    comm = ApplicationCommunicator(app, asgi_scope(method, headers, path))
    await comm.send_input({"type": "http.request", "body": body, "more_body": False})
    start = await comm.receive_output(timeout)
    chunks = []
    while True:
        msg = await comm.receive_output(timeout)
        chunks.append(msg.get("body", b""))
        if not msg.get("more_body"):
            break
    await comm.wait(timeout)
    return AsgiResponse(start["status"], start.get("headers", []), b"".join(chunks))


@pytest.fixture
def mcp_app():
    return McpHttpApp()
