"""server.json for the MCP Registry, generated from settings."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command


def run(*args: str) -> dict:
    out = io.StringIO()
    call_command("mcp_server_json", *args, stdout=out)
    return json.loads(out.getvalue())


def test_it_declares_the_remote_and_the_secret_bearer_header(settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False, "PUBLIC_URL": "https://prompts.example.com/mcp"}
    document = run()
    assert document["$schema"].endswith("/server.schema.json")
    assert document["name"] == "com.example.prompts/mcp-prompt-registry"
    assert document["remotes"] == [{
        "type": "streamable-http", "url": "https://prompts.example.com/mcp",
        "headers": [{"name": "Authorization", "description": document["remotes"][0]["headers"][0]["description"],
                     "isRequired": True, "isSecret": True}],
    }]
    assert document["version"] and document["description"]


def test_anonymous_servers_declare_the_header_optional_and_names_can_be_set(settings, tmp_path):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "REGISTRY_NAME": "io.github.acme/prompts"}
    target = tmp_path / "server.json"
    call_command("mcp_server_json", "--url", "https://x.acme.io/mcp", "--output", str(target), stderr=io.StringIO())
    document = json.loads(target.read_text())
    assert document["name"] == "io.github.acme/prompts"
    assert document["remotes"][0]["headers"][0]["isRequired"] is False


def test_without_a_public_url_it_says_what_to_set(settings):
    settings.MCP_ENDPOINT = {"PUBLIC_URL": ""}
    with pytest.raises(CommandError, match="MCP_PUBLIC_URL"):
        run()
    with pytest.raises(CommandError, match="http"):
        run("--url", "ftp://x.example.com/mcp")
