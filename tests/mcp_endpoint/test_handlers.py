"""Handlers against the real registry read side: pagination, rendering, completion, mirror
tools, authentication and per-client caching scope."""

from __future__ import annotations

import json

import pytest

from mcp_endpoint.dispatch.discovery import server_info
from mcp_endpoint.handlers import reads
from mcp_endpoint.handlers.completion import completion_complete
from mcp_endpoint.handlers.domain_errors import translate_domain_error
from mcp_endpoint.handlers.identity import anonymous, authenticate, identity_of
from mcp_endpoint.handlers.lists import prompts_list, resources_list
from mcp_endpoint.handlers.prompts import prompts_get
from mcp_endpoint.handlers.resources import resources_read
from mcp_endpoint.handlers.tools import tools_call, tools_list
from mcp_endpoint.wire import errors
from mcp_endpoint.wire.context import RequestContext
from mcp_endpoint.wire.jsonrpc import RawJSON
from registry import errors as registry_errors
from registry.serving.clients import create_client

pytestmark = pytest.mark.django_db(transaction=True)


def ctx(version="2025-11-25", identity=None, session=None):
    identity = identity or anonymous()
    return RequestContext(version=version, modern=version == "2026-07-28", identity=identity,
                          server_info=server_info(version), session=session)


def as_dict(result):
    return json.loads(result.data) if isinstance(result, RawJSON) else result


async def test_prompts_list_pages_through_every_prompt_with_signed_cursors(many_prompts):
    seen, cursor, pages = [], None, 0
    while True:
        page = as_dict(await prompts_list(ctx(), {"cursor": cursor} if cursor else {}))
        pages += 1
        seen += [p["name"] for p in page["prompts"]]
        cursor = page.get("nextCursor")
        if not cursor:
            break
    assert pages == 3 and len(seen) == len(set(seen)) == 255 and seen == sorted(seen)


async def test_tampered_cursor_is_invalid_params(many_prompts):
    page = as_dict(await prompts_list(ctx(), {}))
    cursor = page["nextCursor"]
    with pytest.raises(errors.InvalidParams):
        await prompts_list(ctx(), {"cursor": cursor[:-3] + ("A" if cursor[-3] != "A" else "B") + cursor[-2:]})
    with pytest.raises(errors.InvalidParams):
        await resources_list(ctx(), {"cursor": cursor})  # minted for prompts/list


async def test_list_pages_are_served_from_the_result_cache_until_the_catalog_changes(registry_data):
    first = await prompts_list(ctx(), {})
    assert await prompts_list(ctx(), {}) is first
    from registry import changes

    changes.bump_generation()
    assert await prompts_list(ctx(), {}) is not first


async def test_prompts_get_renders_arguments(registry_data):
    result = await prompts_get(ctx(), {"name": "test_prompt_with_arguments",
                                       "arguments": {"arg1": "testValue1", "arg2": "testValue2"}})
    text = result["messages"][0]["content"]["text"]
    assert "testValue1" in text and "testValue2" in text


async def test_prompts_get_with_missing_argument_raises_the_domain_error(registry_data):
    with pytest.raises(registry_errors.MissingArguments):
        await prompts_get(ctx(), {"name": "test_prompt_with_arguments", "arguments": {"arg1": "x"}})


async def test_prompt_arguments_must_be_strings(registry_data):
    with pytest.raises(errors.InvalidParams):
        await prompts_get(ctx(), {"name": "test_prompt_with_arguments", "arguments": {"arg1": 1}})


def test_domain_errors_translate_to_protocol_errors():
    assert translate_domain_error(registry_errors.UnknownPrompt("x")).code == -32602
    assert translate_domain_error(registry_errors.MissingArguments(["a"])).data == {"missing": ["a"]}
    not_found = translate_domain_error(registry_errors.UnknownResource("a://b"))
    assert isinstance(not_found, errors.ResourceNotFound) and not_found.uri == "a://b"
    assert translate_domain_error(registry_errors.InvalidUri("a b", "space")).data == {"uri": "a b"}
    assert translate_domain_error(ValueError("boom")) is None


async def test_embedded_resource_prompt_embeds_the_argument_uri_verbatim(registry_data):
    result = await prompts_get(ctx(), {"name": "test_prompt_with_embedded_resource",
                                       "arguments": {"resourceUri": "test://example-resource"}})
    block = result["messages"][0]["content"]
    assert block["type"] == "resource" and block["resource"]["uri"] == "test://example-resource"


async def test_resources_read_serves_text_blob_and_template_matches(registry_data):
    text = as_dict(await resources_read(ctx(), {"uri": "test://static-text"}))["contents"][0]
    assert text["text"].startswith("This is the content")
    blob = as_dict(await resources_read(ctx(), {"uri": "test://static-binary"}))["contents"][0]
    assert blob["blob"] and blob["mimeType"] == "image/png"
    templ = as_dict(await resources_read(ctx(), {"uri": "test://template/123/data"}))["contents"][0]
    assert templ["uri"] == "test://template/123/data" and "123" in templ["text"]


async def test_completion_returns_prefix_matches_with_totals(registry_data):
    result = await completion_complete(ctx(), {
        "ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
        "argument": {"name": "arg1", "value": "test"}})
    assert result["completion"]["values"] == ["test-one", "test-two"]
    assert result["completion"]["total"] == 2 and result["completion"]["hasMore"] is False


async def test_completion_rejects_a_malformed_ref(registry_data):
    with pytest.raises(errors.InvalidParams):
        await completion_complete(ctx(), {"ref": {"type": "ref/tool"}, "argument": {"name": "a", "value": ""}})


async def test_tools_list_names_the_three_read_only_mirror_tools(registry_data):
    tools = (await tools_list(ctx(), {}))["tools"]
    assert {t["name"] for t in tools} == {"get_prompt", "read_resource", "search_registry"}
    assert all(t["annotations"]["readOnlyHint"] for t in tools)


async def test_get_prompt_tool_renders_messages_as_content(registry_data):
    result = await tools_call(ctx(), {"name": "get_prompt", "arguments": {
        "name": "test_prompt_with_arguments", "arguments": {"arg1": "A1", "arg2": "B2"}}})
    assert result["isError"] is False
    assert any("A1" in b.get("text", "") for b in result["content"])


async def test_read_resource_tool_embeds_the_content(registry_data):
    result = await tools_call(ctx(), {"name": "read_resource", "arguments": {"uri": "test://static-text"}})
    assert result["content"][0]["type"] == "resource"
    assert result["content"][0]["resource"]["uri"] == "test://static-text"


async def test_search_tool_returns_resource_links_and_prompt_hints(registry_data):
    result = await tools_call(ctx(), {"name": "search_registry", "arguments": {"query": "static"}})
    links = [b for b in result["content"] if b["type"] == "resource_link"]
    assert {b["uri"] for b in links} == {"test://static-text", "test://static-binary"}
    result = await tools_call(ctx(), {"name": "search_registry", "arguments": {"query": "image"}})
    assert any("test_prompt_with_image" in b.get("text", "") for b in result["content"])


@pytest.mark.parametrize("params", [
    {"name": "no_such_tool", "arguments": {}},
    {"name": "get_prompt", "arguments": {"name": "no-such-prompt"}},
    {"name": "get_prompt", "arguments": {"name": 3}},
    {"name": "read_resource", "arguments": {"uri": "test://missing"}},
    {"name": "search_registry", "arguments": {"query": "x", "limit": 0}},
    {"name": "search_registry", "arguments": "not an object"},
])
async def test_tool_failures_are_results_with_is_error(registry_data, params):
    result = await tools_call(ctx(), params)
    assert result["isError"] is True and result["content"][0]["type"] == "text"


async def test_anonymous_needs_the_setting(settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": False}
    with pytest.raises(errors.Unauthorized):
        await authenticate(None)
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True}
    identity = await authenticate(None)
    assert identity.label == "production" and identity.client_id is None and not identity.scoped


async def test_bad_token_is_unauthorized_even_when_anonymous_is_allowed(registry_data, anonymous_allowed):
    with pytest.raises(errors.Unauthorized):
        await authenticate("Bearer mcpr_not-a-real-token")
    with pytest.raises(errors.Unauthorized):
        await authenticate("Basic dXNlcjpwdw==")


async def test_scoped_client_sees_only_its_tags_with_private_cache_scope(registry_data):
    from asgiref.sync import sync_to_async

    _client, token = await sync_to_async(create_client)(name="ops-agent", scope_tags="ops")
    identity = await authenticate(f"Bearer {token}")
    assert identity.scoped and identity.client_id is not None
    page = as_dict(await resources_list(ctx("2026-07-28", identity), {}))
    assert [r["uri"] for r in page["resources"]] == ["registry://changes/recent", "test://secret-notes"]
    assert page["cacheScope"] == "private"
    public = as_dict(await resources_list(ctx("2026-07-28"), {}))
    assert public["cacheScope"] == "public" and "test://secret-notes" in [r["uri"] for r in public["resources"]]


class _RolloutCatalog:
    """A catalog stand-in whose lists differ per client (a percentage rollout is running)."""

    generation = 1

    def prompts(self, viewer):
        return [{"name": "p", "description": f"variant for {viewer.client_name or 'anonymous'}"}]

    def personalised(self, viewer, *, texts=True):
        return bool(viewer.client_name)

    def variant(self, viewer, *, texts=True):
        return ("p@v2",) if viewer.client_name == "canary" else ()


async def test_rollout_personalised_lists_are_private_and_cached_per_variant(monkeypatch):
    from registry.serving.viewer import Viewer

    monkeypatch.setattr(reads.source, "cached_catalog", lambda label: _RolloutCatalog())
    canary = identity_of(Viewer(client_id=1, client_name="canary"))
    steady = identity_of(Viewer(client_id=2, client_name="steady"))
    first = as_dict(await prompts_list(ctx("2026-07-28", canary), {}))
    second = as_dict(await prompts_list(ctx("2026-07-28", steady), {}))
    assert first["cacheScope"] == second["cacheScope"] == "private"
    assert "canary" in first["prompts"][0]["description"] and "steady" in second["prompts"][0]["description"]
    anonymous = as_dict(await prompts_list(ctx("2026-07-28"), {}))
    assert anonymous["cacheScope"] == "public"
