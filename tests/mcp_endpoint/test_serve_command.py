"""`manage.py serve`: the production entry point's uvicorn settings, held in one place."""

from __future__ import annotations

import pytest
import uvicorn
from django.core.management import CommandError, call_command

from mcp_endpoint.management.commands.serve import APPLICATION, uvicorn_options


@pytest.fixture
def ran(monkeypatch):
    calls: list[dict] = []
    monkeypatch.setattr(uvicorn, "run", lambda **kwargs: calls.append(kwargs))
    return calls


def test_serve_runs_the_project_application_on_uvicorn_with_the_fast_loop_and_parser(ran):
    call_command("serve", "--port", "8123", "--workers", "3")
    (options,) = ran
    assert options["app"] == APPLICATION == "config.asgi:application"
    assert (options["port"], options["workers"]) == (8123, 3)
    assert (options["loop"], options["http"]) == ("uvloop", "httptools")
    assert options["access_log"] is False


def test_h11_is_given_a_head_buffer_above_the_projects_head_limit(settings):
    """Otherwise h11 answers an oversized head that arrives in pieces with a bare 400 and a reset
    before the project's 431 with a JSON-RPC body can be sent."""
    assert uvicorn_options(host="h", port=1, workers=1, http="h11")["h11_max_incomplete_event_size"] >= 1024 * 1024
    settings.MAX_REQUEST_HEAD_BYTES = 4 * 1024 * 1024
    options = uvicorn_options(host="h", port=1, workers=1, http="h11")
    assert options["h11_max_incomplete_event_size"] > settings.MAX_REQUEST_HEAD_BYTES


def test_proxy_headers_are_trusted_only_when_asked_and_only_from_the_given_addresses(ran):
    call_command("serve")
    assert ran[-1]["proxy_headers"] is False  # uvicorn's own default trusts 127.0.0.1's X-Forwarded-For
    call_command("serve", "--proxy-headers", "--forwarded-allow-ips", "10.0.0.5")
    assert ran[-1]["proxy_headers"] is True and ran[-1]["forwarded_allow_ips"] == "10.0.0.5"


def test_shutdown_does_not_wait_for_notification_streams_forever(ran):
    call_command("serve")
    assert 0 < ran[-1]["timeout_graceful_shutdown"] <= 30


def test_no_workers_is_refused(ran):
    with pytest.raises(CommandError):
        call_command("serve", "--workers", "0")
    assert ran == []
