"""build_application: exactly /mcp goes to the MCP transport, the rest to Django."""

from __future__ import annotations

import pytest

from mcp_endpoint.routing import build_application
from tests.mcp_endpoint.conftest import call_asgi, modern_request

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("anonymous_allowed")]


async def django_stub(scope, receive, send):
    await send({"type": "http.response.start", "status": 299, "headers": []})
    await send({"type": "http.response.body", "body": b"django"})


async def test_only_the_exact_path_goes_to_mcp(registry_data):
    app = build_application(django_stub)
    headers, body = modern_request("server/discover")
    assert (await call_asgi(app, "POST", headers, body)).status == 200
    assert (await call_asgi(app, "POST", headers, body, path="/mcp/")).status == 299
    assert (await call_asgi(app, "GET", headers, path="/admin/")).status == 299


async def test_lifespan_startup_and_shutdown_are_acknowledged():
    from channels.testing import ApplicationCommunicator

    comm = ApplicationCommunicator(build_application(django_stub), {"type": "lifespan"})
    await comm.send_input({"type": "lifespan.startup"})
    assert (await comm.receive_output(1))["type"] == "lifespan.startup.complete"
    await comm.send_input({"type": "lifespan.shutdown"})
    assert (await comm.receive_output(1))["type"] == "lifespan.shutdown.complete"
    await comm.wait(1)


def test_the_project_asgi_application_is_built_by_us():
    from config.asgi import application

    assert hasattr(application, "mcp_app")
