"""Typed prompt arguments over MCP at both wire generations: every bad argument in one -32602,
constraints in the listed descriptions, completion, and the 2026-07-28 InputRequiredResult
(elicitation form built from the types) with its retry."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mcp_endpoint.dispatch.dispatcher import dispatcher
from mcp_endpoint.handlers.identity import anonymous
from mcp_endpoint.handlers.prompts import ARGUMENTS_INPUT
from tests.factories import make_resource, make_typed_prompt, make_user
from tests.mcp_endpoint.conftest import LEGACY, MODERN, legacy_headers, modern_request, publish, rpc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("anonymous_allowed")]

FORMS = {"elicitation": {}}


@pytest.fixture
def typed(transactional_db):
    user = make_user(None)
    publish(make_resource("docs://style", text="Be brief."), user)
    publish(make_typed_prompt(title="Typed reply"), user)


async def modern(method: str, params: dict[str, Any], capabilities: dict[str, Any] | None = None, rid: int = 1):
    headers, _ = modern_request(method, params)
    meta = {"io.modelcontextprotocol/protocolVersion": MODERN,
            "io.modelcontextprotocol/clientCapabilities": capabilities or {}}
    body = json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": {**params, "_meta": meta}}).encode()
    reply = await dispatcher.post(headers, body, anonymous())
    return reply, json.loads(reply.body)


async def legacy_session(capabilities: dict[str, Any]) -> str:
    params = {"protocolVersion": LEGACY, "capabilities": capabilities, "clientInfo": {"name": "t", "version": "1"}}
    reply = await dispatcher.post(legacy_headers(version=None), rpc("initialize", params), anonymous())
    return reply.session_id


async def legacy(session_id: str, method: str, params: dict[str, Any]):
    reply = await dispatcher.post(legacy_headers(session_id), rpc(method, params), anonymous())
    return reply, json.loads(reply.body)


BAD = {"tone": "loud", "count": "0", "short": "maybe"}  # and `code` (required) is missing


async def test_modern_bad_arguments_are_one_32602_listing_every_reason(typed):
    reply, body = await modern("prompts/get", {"name": "typed-reply", "arguments": BAD})
    assert reply.status == 400 and body["error"]["code"] == -32602
    assert body["error"]["data"] == {
        "invalid": [{"name": "tone", "reason": "must be one of: formal, warm"},
                    {"name": "count", "reason": "must be a whole number from 1 to 10"},
                    {"name": "short", "reason": "must be true or false"}],
        "missing": ["code"],
    }


async def test_legacy_bad_arguments_are_one_32602_listing_every_reason(typed):
    session = await legacy_session({})
    _reply, body = await legacy(session, "prompts/get", {"name": "typed-reply", "arguments": BAD})
    assert body["error"]["code"] == -32602
    assert [i["name"] for i in body["error"]["data"]["invalid"]] == ["tone", "count", "short"]
    assert body["error"]["data"]["missing"] == ["code"]


async def test_listed_arguments_describe_their_constraints_at_both_generations(typed):
    _, body = await modern("prompts/list", {})
    [prompt] = body["result"]["prompts"]
    tone = prompt["arguments"][0]
    assert tone == {"name": "tone", "description": "Tone of the reply (one of: formal, warm)", "required": True}
    session = await legacy_session({})
    _, body = await legacy(session, "prompts/list", {})
    assert body["result"]["prompts"][0]["arguments"][1]["description"] == "A whole number from 1 to 10"


async def test_completion_offers_the_enum_choices_and_resource_uris(typed):
    ref = {"type": "ref/prompt", "name": "typed-reply"}
    _, body = await modern("completion/complete", {"ref": ref, "argument": {"name": "tone", "value": "f"}})
    assert body["result"]["completion"]["values"] == ["formal"]
    _, body = await modern("completion/complete", {"ref": ref, "argument": {"name": "doc", "value": ""}})
    assert body["result"]["completion"]["values"] == ["docs://style"]


async def test_missing_arguments_with_form_elicitation_ask_for_them_with_a_typed_form(typed):
    reply, body = await modern("prompts/get", {"name": "typed-reply", "arguments": {"tone": "warm"}}, FORMS)
    assert reply.status == 200
    result = body["result"]
    assert result["resultType"] == "input_required"
    assert "ttlMs" not in result and "cacheScope" not in result  # never cache an InputRequiredResult
    assert "requestState" not in result
    request = result["inputRequests"][ARGUMENTS_INPUT]
    assert request["method"] == "elicitation/create"
    params = request["params"]
    assert params["mode"] == "form" and "Typed reply" in params["message"]
    schema = params["requestedSchema"]
    assert schema["required"] == ["count", "code"]
    assert schema["properties"]["count"] == {"type": "integer", "minimum": 1, "maximum": 10, "title": "count",
                                             "description": "A whole number from 1 to 10"}
    assert schema["properties"]["code"]["type"] == "string" and schema["properties"]["code"]["maxLength"] == 8


async def test_the_retry_with_input_responses_renders_the_prompt(typed):
    answers = {ARGUMENTS_INPUT: {"action": "accept",
                                 "content": {"count": 7, "code": "AB-12", "short": True, "tone": "formal"}}}
    reply, body = await modern("prompts/get", {"name": "typed-reply", "arguments": {"tone": "warm"},
                                               "inputResponses": answers}, FORMS, rid=2)
    assert reply.status == 200, body
    result = body["result"]
    assert result["resultType"] == "complete"
    assert result["messages"][0]["content"]["text"] == "warm x7 r0.5 strue cAB-12 d"  # given arguments win


async def test_a_retry_still_missing_something_asks_again_for_what_is_left(typed):
    answers = {ARGUMENTS_INPUT: {"action": "accept", "content": {"count": 3}}, "other": {"action": "accept"}}
    _, body = await modern("prompts/get", {"name": "typed-reply", "arguments": {"tone": "warm"},
                                           "inputResponses": answers}, FORMS)
    schema = body["result"]["inputRequests"][ARGUMENTS_INPUT]["params"]["requestedSchema"]
    assert body["result"]["resultType"] == "input_required" and schema["required"] == ["code"]


async def test_a_declined_form_is_the_missing_arguments_error(typed):
    answers = {ARGUMENTS_INPUT: {"action": "decline"}}
    reply, body = await modern("prompts/get", {"name": "typed-reply", "arguments": {"tone": "warm"},
                                               "inputResponses": answers}, FORMS)
    assert reply.status == 400 and body["error"]["code"] == -32602
    assert body["error"]["data"] == {"missing": ["count", "code"]}


async def test_form_values_are_checked_like_arguments(typed):
    answers = {ARGUMENTS_INPUT: {"action": "accept", "content": {"count": 70, "code": "AB-12"}}}
    _reply, body = await modern("prompts/get", {"name": "typed-reply", "arguments": {"tone": "warm"},
                                                "inputResponses": answers}, FORMS)
    assert body["error"]["code"] == -32602
    assert body["error"]["data"]["invalid"] == [{"name": "count", "reason": "must be a whole number from 1 to 10"}]


async def test_malformed_input_responses_are_invalid_params(typed):
    for responses in ([], {ARGUMENTS_INPUT: {"action": "maybe"}},
                      {ARGUMENTS_INPUT: {"action": "accept", "content": ["x"]}}):
        _reply, body = await modern("prompts/get", {"name": "typed-reply", "inputResponses": responses}, FORMS)
        assert body["error"]["code"] == -32602, responses


async def test_invalid_values_are_an_error_even_for_a_client_that_elicits(typed):
    _reply, body = await modern("prompts/get", {"name": "typed-reply", "arguments": BAD}, FORMS)
    assert body["error"]["code"] == -32602 and body["error"]["data"]["missing"] == ["code"]


async def test_no_input_required_without_the_form_elicitation_capability(typed):
    for capabilities in ({}, {"elicitation": {"url": {}}}):
        _, body = await modern("prompts/get", {"name": "typed-reply", "arguments": {"tone": "warm"}}, capabilities)
        assert body["error"]["data"] == {"missing": ["count", "code"]}, capabilities


async def test_legacy_revisions_keep_32602_even_with_elicitation(typed):
    session = await legacy_session({"elicitation": {}})
    answers = {ARGUMENTS_INPUT: {"action": "accept", "content": {"count": 7, "code": "AB-12"}}}
    _, body = await legacy(session, "prompts/get", {"name": "typed-reply", "arguments": {"tone": "warm"},
                                                    "inputResponses": answers})
    assert body["error"]["code"] == -32602 and body["error"]["data"] == {"missing": ["count", "code"]}


async def test_the_get_prompt_tool_reports_every_bad_argument_to_the_model(typed):
    _, body = await modern("tools/call", {"name": "get_prompt",
                                          "arguments": {"name": "typed-reply", "arguments": BAD}})
    result = body["result"]
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "Missing required argument(s): code" in text
    assert "tone must be one of: formal, warm" in text and "short must be true or false" in text


async def test_bad_argument_reasons_stay_english_whatever_language_is_active(typed):
    """MCP clients get the registry's words: the admin's translations never reach a JSON-RPC error."""
    from django.utils import translation

    _, english = await modern("prompts/get", {"name": "typed-reply", "arguments": BAD})
    for language in ("de", "zh-hans"):
        with translation.override(language):
            _, body = await modern("prompts/get", {"name": "typed-reply", "arguments": BAD}, rid=2)
        assert body["error"] == english["error"]


@pytest.fixture
def long_note(transactional_db):
    from tests.factories import make_prompt

    publish(make_prompt("long-note", arguments=[{"name": "note", "pattern": r"(\w+\s?){1,50}$",
                                                  "max_length": 2_000_000}],
                        messages=[{"role": "user", "kind": "text", "text": "{{ note }}"}]), make_user(None))


async def test_a_long_argument_is_checked_off_the_event_loop_and_a_short_one_on_it(long_note, monkeypatch):
    """A 1 MB value against a pattern must not hold up other clients: its check and render run in
    a worker thread; everyday values stay on the loop (no thread hop)."""
    import threading

    from registry.formats import rendering

    threads = []
    checked = rendering.check_value

    def recording(spec, value, is_resource=None):
        threads.append(threading.current_thread())
        return checked(spec, value, is_resource)

    await modern("prompts/get", {"name": "long-note", "arguments": {"note": "warm up"}})  # content loaded
    monkeypatch.setattr(rendering, "check_value", recording)
    loop_thread = threading.current_thread()
    for value in ("a few words", "a" * 1_000_000):
        reply, body = await modern("prompts/get", {"name": "long-note", "arguments": {"note": value}})
        assert reply.status == 200, body
        assert body["result"]["messages"][0]["content"]["text"] == value
    assert threads[0] is loop_thread and threads[-1] is not loop_thread
