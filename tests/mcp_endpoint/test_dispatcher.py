"""Protocol behaviour through the dispatcher, without HTTP (the SDK's in-memory pattern)."""

from __future__ import annotations

import json

import pytest

from mcp_endpoint.dispatch.dispatcher import dispatcher
from mcp_endpoint.handlers.identity import anonymous
from mcp_endpoint.models import McpSession
from tests.mcp_endpoint.conftest import LEGACY, MODERN, legacy_headers, modern_request, rpc

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("anonymous_allowed")]


async def initialize(version=LEGACY):
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    reply = await dispatcher.post(legacy_headers(version=None), rpc("initialize", params), anonymous())
    assert reply.status == 200, reply.body
    return reply


async def legacy_call(session_id, method, params=None, version=LEGACY, rid=1):
    reply = await dispatcher.post(legacy_headers(session_id, version), rpc(method, params, rid), anonymous())
    return reply, (json.loads(reply.body) if reply.body else None)


async def modern_call(method, params=None, **kw):
    headers, body = modern_request(method, params, **kw)
    reply = await dispatcher.post(headers, body, anonymous())
    return reply, json.loads(reply.body) if reply.body else None


# ----------------------------------------------------------------------------- legacy lifecycle


async def test_initialize_negotiates_version_and_mints_a_stored_session(registry_data):
    reply = await initialize("2025-06-18")
    result = json.loads(reply.body)["result"]
    assert result["protocolVersion"] == "2025-06-18"
    assert result["capabilities"]["logging"] == {}
    assert result["capabilities"]["resources"] == {"subscribe": True, "listChanged": True}
    assert "description" not in result["serverInfo"]  # 2025-11-25+ field
    assert all(0x21 <= ord(c) <= 0x7E for c in reply.session_id)
    assert await McpSession.objects.filter(pk=reply.session_id, protocol_version="2025-06-18").aexists()


async def test_initialize_with_the_modern_or_an_unknown_version_offers_the_newest_legacy(registry_data):
    for asked in ("2026-07-28", "2024-01-01"):
        result = json.loads((await initialize(asked)).body)["result"]
        assert result["protocolVersion"] == "2025-11-25"


async def test_request_without_session_id_is_400(registry_data):
    reply, body = await legacy_call(None, "prompts/list")
    assert reply.status == 400 and body["error"]["code"] == -32600


async def test_unknown_session_is_404(registry_data):
    reply, body = await legacy_call("deadbeef" * 4, "prompts/list")
    assert reply.status == 404 and "error" in body


async def test_ended_session_is_404_and_a_second_end_too(registry_data):
    sid = (await initialize()).session_id
    headers = legacy_headers(sid)
    assert (await dispatcher.end_session(headers, anonymous())).status == 200
    reply, _ = await legacy_call(sid, "tools/list")
    assert reply.status == 404
    assert (await dispatcher.end_session(headers, anonymous())).status == 404


async def test_end_in_another_process_is_seen_after_the_cache_window(registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "SESSION_CACHE_SECONDS": 0}
    sid = (await initialize()).session_id
    await McpSession.objects.filter(pk=sid).aupdate(ended=True)  # as another worker would
    reply, _ = await legacy_call(sid, "ping")
    assert reply.status == 404


async def test_ping_and_notifications(registry_data):
    sid = (await initialize()).session_id
    _, body = await legacy_call(sid, "ping")
    assert body["result"] == {}
    note = await dispatcher.post(legacy_headers(sid), rpc("notifications/initialized", rid=None), anonymous())
    assert note.status == 202 and note.body is None


async def test_set_level_stores_the_level_and_rejects_unknown_levels(registry_data):
    sid = (await initialize()).session_id
    _, body = await legacy_call(sid, "logging/setLevel", {"level": "warning"})
    assert body["result"] == {}
    assert (await McpSession.objects.aget(pk=sid)).log_level == "warning"
    _, body = await legacy_call(sid, "logging/setLevel", {"level": "loud"})
    assert body["error"]["code"] == -32602


async def test_subscribe_and_unsubscribe_are_recorded_on_the_session(registry_data):
    sid = (await initialize()).session_id
    _, body = await legacy_call(sid, "resources/subscribe", {"uri": "test://watched-resource"})
    assert body["result"] == {}
    assert (await McpSession.objects.aget(pk=sid)).subscriptions == ["test://watched-resource"]
    _, body = await legacy_call(sid, "resources/unsubscribe", {"uri": "test://watched-resource"})
    assert body["result"] == {}
    assert (await McpSession.objects.aget(pk=sid)).subscriptions == []


async def test_subscribing_to_an_unknown_uri_is_resource_not_found(registry_data):
    sid = (await initialize()).session_id
    _, body = await legacy_call(sid, "resources/subscribe", {"uri": "test://nope"})
    assert body["error"]["code"] == -32002 and body["error"]["data"] == {"uri": "test://nope"}


async def test_invalid_protocol_version_header_on_a_session_is_400(registry_data):
    sid = (await initialize()).session_id
    reply, body = await legacy_call(sid, "ping", version="1999-01-01")
    assert reply.status == 400 and "error" in body


async def test_unknown_method_on_legacy_is_method_not_found_with_200(registry_data):
    sid = (await initialize()).session_id
    reply, body = await legacy_call(sid, "server/discover")
    assert reply.status == 200 and body["error"]["code"] == -32601


async def test_legacy_unknown_resource_is_32002_with_uri(registry_data):
    sid = (await initialize()).session_id
    _, body = await legacy_call(sid, "resources/read", {"uri": "test://missing"})
    assert body["error"]["code"] == -32002 and body["error"]["data"]["uri"] == "test://missing"


async def test_legacy_results_carry_no_modern_fields(registry_data):
    sid = (await initialize()).session_id
    _, body = await legacy_call(sid, "prompts/list")
    assert "resultType" not in body["result"] and "ttlMs" not in body["result"] and "_meta" not in body["result"]


# ----------------------------------------------------------------------------- batches


async def test_batches_work_for_2025_03_26_sessions(registry_data):
    sid = (await initialize("2025-03-26")).session_id
    batch = json.dumps([json.loads(rpc("ping", rid=1)), json.loads(rpc("notifications/initialized", rid=None)),
                        json.loads(rpc("prompts/list", rid=2))]).encode()
    reply = await dispatcher.post(legacy_headers(sid, "2025-03-26"), batch, anonymous())
    answers = json.loads(reply.body)
    assert reply.status == 200 and [a["id"] for a in answers] == [1, 2]


async def test_a_batch_longer_than_the_limit_is_one_32600_error_and_runs_nothing(registry_data, settings):
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "MAX_BATCH_LENGTH": 5}
    sid = (await initialize("2025-03-26")).session_id
    batch = json.dumps([json.loads(rpc("resources/subscribe", {"uri": "test://static-text"}, rid=n))
                        for n in range(6)]).encode()
    reply = await dispatcher.post(legacy_headers(sid, "2025-03-26"), batch, anonymous())
    error = json.loads(reply.body)["error"]
    assert reply.status == 400 and error["code"] == -32600 and "at most 5 messages (got 6)" in error["message"]
    from mcp_endpoint.wire.sessions import store as session_store

    assert (await session_store.get(sid, fresh=True)).subscriptions == set()


async def test_a_batch_whose_responses_pass_the_byte_limit_answers_the_rest_with_an_error(registry_data, settings):
    """The review's 1 MB batch of reads made a 43 MB reply; now the responses stop at the limit
    and each later request is told to come again on its own (it is not run)."""
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "MAX_BATCH_RESPONSE_BYTES": 4000}
    sid = (await initialize("2025-03-26")).session_id
    batch = json.dumps([json.loads(rpc("prompts/list", rid=n)) for n in range(40)]
                       + [json.loads(rpc("notifications/initialized", rid=None))]).encode()
    reply = await dispatcher.post(legacy_headers(sid, "2025-03-26"), batch, anonymous())
    answers = json.loads(reply.body)
    assert reply.status == 200 and [a["id"] for a in answers] == list(range(40))
    served = [a for a in answers if "result" in a]
    refused = [a for a in answers if "error" in a]
    assert served and refused and answers.index(refused[0]) == len(served)  # a prefix is served
    assert all(a["error"]["code"] == -32600 and "4,000 bytes" in a["error"]["message"] for a in refused)
    assert len(reply.body) < 4000 + 40 * 200


async def test_batches_are_refused_after_2025_03_26(registry_data):
    sid = (await initialize("2025-11-25")).session_id
    batch = json.dumps([json.loads(rpc("ping", rid=1))]).encode()
    reply = await dispatcher.post(legacy_headers(sid, None), batch, anonymous())
    assert reply.status == 400 and json.loads(reply.body)["error"]["code"] == -32600


async def test_2025_03_26_gets_downgraded_shapes(registry_data):
    sid = (await initialize("2025-03-26")).session_id
    _, body = await legacy_call(sid, "prompts/get", {"name": "test_prompt_with_link"}, version=None)
    assert body["result"]["messages"][0]["content"]["type"] == "text"
    assert "test://static-text" in body["result"]["messages"][0]["content"]["text"]
    _, body = await legacy_call(sid, "resources/list", version=None)
    for resource in body["result"]["resources"]:
        assert "title" not in resource and "lastModified" not in resource.get("annotations", {})


# ----------------------------------------------------------------------------- modern wire


async def test_discover_lists_versions_capabilities_and_caching_hints(registry_data):
    reply, body = await modern_call("server/discover")
    result = body["result"]
    assert reply.status == 200
    assert MODERN in result["supportedVersions"] and "logging" not in result["capabilities"]
    assert result["resultType"] == "complete" and result["ttlMs"] == 60000 and result["cacheScope"] == "public"
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"]
    assert reply.session_id is None


@pytest.mark.parametrize("meta", [None, {"io.modelcontextprotocol/protocolVersion": MODERN},
                                  {"io.modelcontextprotocol/clientCapabilities": {}}])
async def test_missing_required_meta_is_400_invalid_params(registry_data, meta):
    headers, _ = modern_request("prompts/list")
    params = {} if meta is None else {"_meta": meta}
    body = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "prompts/list", "params": params}).encode()
    reply = await dispatcher.post(headers, body, anonymous())
    assert reply.status == 400 and json.loads(reply.body)["error"]["code"] == -32602
    assert json.loads(reply.body)["id"] == 9


async def test_unsupported_modern_version_is_32022_with_supported_list(registry_data):
    reply, body = await modern_call("prompts/list", version="v999.0.0")
    assert reply.status == 400 and body["error"]["code"] == -32022
    assert body["error"]["data"]["requested"] == "v999.0.0" and MODERN in body["error"]["data"]["supported"]


async def test_header_and_meta_disagreeing_is_32020(registry_data):
    headers, _ = modern_request("prompts/list")
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "prompts/list",
                       "params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "v999.0.0",
                                            "io.modelcontextprotocol/clientCapabilities": {}}}}).encode()
    reply = await dispatcher.post(headers, body, anonymous())
    assert reply.status == 400 and json.loads(reply.body)["error"]["code"] == -32020


async def test_mcp_name_must_match_the_prompt_name(registry_data):
    headers, body = modern_request("prompts/get", {"name": "test_simple_prompt"})
    headers["mcp-name"] = "something-else"
    reply = await dispatcher.post(headers, body, anonymous())
    assert reply.status == 400 and json.loads(reply.body)["error"]["code"] == -32020


async def test_duplicated_routing_header_is_32020(registry_data):
    headers, body = modern_request("prompts/list")
    reply = await dispatcher.post(headers, body, anonymous(), duplicated_header="mcp-method")
    assert reply.status == 400 and json.loads(reply.body)["error"]["code"] == -32020


@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/subscribe",
                                    "resources/unsubscribe", "unknown/method"])
async def test_removed_and_unknown_methods_are_404_method_not_found(registry_data, method):
    reply, body = await modern_call(method, {"uri": "test://watched-resource"} if "subscribe" in method else {},
                                    rid="r-1")
    assert reply.status == 404 and body["error"]["code"] == -32601 and body["id"] == "r-1"


async def test_modern_unknown_resource_is_400_invalid_params_with_uri(registry_data):
    reply, body = await modern_call("resources/read", {"uri": "test://nonexistent"})
    assert reply.status == 400
    assert body["error"]["code"] == -32602 and body["error"]["data"]["uri"] == "test://nonexistent"


async def test_every_modern_result_carries_result_type(registry_data):
    for method, params in [("prompts/get", {"name": "test_simple_prompt"}),
                           ("completion/complete", {"ref": {"type": "ref/prompt", "name": "test_prompt_with_arguments"},
                                                    "argument": {"name": "arg1", "value": "te"}}),
                           ("tools/call", {"name": "nope", "arguments": {}})]:
        _, body = await modern_call(method, params)
        assert body["result"]["resultType"] == "complete", method
        assert "ttlMs" not in body["result"], method


async def test_cacheable_modern_results_carry_ttl_and_scope(registry_data):
    for method, params in [("prompts/list", {}), ("resources/list", {}), ("resources/templates/list", {}),
                           ("tools/list", {}), ("resources/read", {"uri": "test://static-text"})]:
        _, body = await modern_call(method, params)
        assert body["result"]["ttlMs"] == 60000 and body["result"]["cacheScope"] == "public", method


async def test_modern_notification_is_accepted_without_body(registry_data):
    headers, _ = modern_request("notifications/cancelled")
    body = json.dumps({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {}}).encode()
    reply = await dispatcher.post(headers, body, anonymous())
    assert reply.status == 202 and reply.body is None


async def test_modern_batch_is_not_accepted(registry_data):
    headers, body = modern_request("prompts/list")
    reply = await dispatcher.post(headers, b"[" + body + b"]", anonymous())
    assert reply.status == 400


async def test_listen_acknowledges_only_honoured_notifications_first(registry_data):
    headers, body = modern_request("subscriptions/listen", {"notifications": {
        "promptsListChanged": True, "toolsListChanged": True, "resourceSubscriptions": ["test://static-text"]}},
        rid=42)
    reply = await dispatcher.post(headers, body, anonymous())
    ack = json.loads(reply.stream.first[0])
    assert ack["method"] == "notifications/subscriptions/acknowledged"
    assert ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"] == 42
    assert ack["params"]["notifications"] == {"promptsListChanged": True,
                                              "resourceSubscriptions": ["test://static-text"]}
    from mcp_endpoint.notify.hub import hub

    (listener,) = hub.listeners
    assert (listener.prompts, listener.resources, listener.uris) == (True, False, {"test://static-text"})
    rendered = listener.render("notifications/resources/updated", {"uri": "test://static-text"})
    assert json.loads(rendered)["params"] == {
        "uri": "test://static-text", "_meta": {"io.modelcontextprotocol/subscriptionId": 42}}
    reply.stream.on_close()
    assert not hub.listeners


@pytest.mark.parametrize("uris", [["ok://a", 7], "test://static-text", [["nested"]]])
async def test_listen_refuses_malformed_uri_lists(registry_data, uris):
    headers, body = modern_request("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}}, rid=1)
    reply = await dispatcher.post(headers, body, anonymous())
    assert reply.stream is None
    assert json.loads(reply.body)["error"]["code"] == -32602


async def test_listen_refuses_more_uris_than_the_limit(registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "MAX_LISTEN_URIS": 10}
    uris = [f"docs://d{i}" for i in range(11)]
    headers, body = modern_request("subscriptions/listen", {"notifications": {"resourceSubscriptions": uris}}, rid=1)
    reply = await dispatcher.post(headers, body, anonymous())
    error = json.loads(reply.body)["error"]
    assert error["code"] == -32602 and error["data"] == {"limit": 10}


async def test_streams_past_the_per_client_limit_get_429(registry_data, settings):
    settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "MAX_STREAMS_PER_CLIENT": 2}
    replies = []
    for rid in range(3):
        headers, body = modern_request("subscriptions/listen", {"notifications": {"promptsListChanged": True}}, rid=rid)
        replies.append(await dispatcher.post(headers, body, anonymous()))
    assert [r.status for r in replies] == [200, 200, 429]
    for reply in replies[:2]:
        reply.stream.on_close()


async def test_parse_error_is_400_with_null_id(registry_data):
    headers, _ = modern_request("prompts/list")
    reply = await dispatcher.post(headers, b"{oops", anonymous())
    assert reply.status == 400 and json.loads(reply.body) == {
        "jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error: body is not valid JSON"}}


async def test_posted_responses_are_accepted_without_body_on_both_wires(registry_data):
    response = json.dumps({"jsonrpc": "2.0", "id": 5, "result": {}}).encode()
    headers, _ = modern_request("prompts/list")
    assert (await dispatcher.post(headers, response, anonymous())).status == 202
    sid = (await initialize()).session_id
    reply = await dispatcher.post(legacy_headers(sid), response, anonymous())
    assert reply.status == 202 and reply.body is None


async def test_results_for_a_client_bound_to_another_label_are_private(registry_data):
    from mcp_endpoint.handlers.identity import identity_of
    from registry.serving.viewer import Viewer

    headers, body = modern_request("prompts/list")
    reply = await dispatcher.post(headers, body, identity_of(Viewer(label="staging", client_id=1, client_name="s")))
    assert json.loads(reply.body)["result"]["cacheScope"] == "private"
    reply = await dispatcher.post(headers, body, anonymous())
    assert json.loads(reply.body)["result"]["cacheScope"] == "public"


@pytest.mark.parametrize("cursor", [["x"], {"a": 1}, 5])
async def test_a_cursor_that_is_not_a_string_is_invalid_params(registry_data, cursor):
    headers, body = modern_request("prompts/list", {"cursor": cursor})
    reply = await dispatcher.post(headers, body, anonymous())
    assert json.loads(reply.body)["error"]["code"] == -32602


async def test_initialize_with_an_oversized_client_info_is_a_json_rpc_error_and_opens_no_session(registry_data):
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "x" * 1_000_000}}
    reply = await dispatcher.post(legacy_headers(version=None), rpc("initialize", params), anonymous())
    error = json.loads(reply.body)["error"]
    assert error["code"] == -32602 and "clientInfo is 1,000,0" in error["message"]
    assert reply.session_id is None and not await McpSession.objects.aexists()


async def test_anonymous_initialize_floods_from_one_address_leave_other_addresses_alone(registry_data, settings):
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "MAX_SESSIONS_PER_CLIENT": 3}
    params = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}

    async def init_from(address):
        identity = await dispatcher.authenticate(None, (address, 40000))
        return (await dispatcher.post(legacy_headers(version=None), rpc("initialize", params), identity)).session_id

    bystander = await init_from("198.51.100.20")
    for _ in range(20):
        await init_from("203.0.113.20")
    assert await McpSession.objects.filter(ended=False).acount() == 4
    assert await McpSession.objects.filter(pk=bystander, ended=False, peer="198.51.100.20").aexists()


@pytest.mark.parametrize("ttl", [60_000, 5_000, 0])
async def test_lists_and_reads_tell_2026_clients_the_configured_cache_ttl(registry_data, settings, ttl):
    """CACHE_TTL_MS (default 60000) is what a 2026-07-28 client that does not listen may serve
    from its cache before it asks again: every cacheable result carries it, also one served
    again from the endpoint's own result cache."""
    if ttl != 60_000:
        settings.MCP_ENDPOINT = {"ALLOW_ANONYMOUS": True, "CACHE_TTL_MS": ttl}
    for _ in range(2):  # the second answer comes from the serialised-result cache
        for method, params in (("prompts/list", {}), ("resources/read", {"uri": "test://static-text"}),
                               ("resources/list", {}), ("server/discover", {})):
            _reply, body = await modern_call(method, params)
            assert body["result"]["ttlMs"] == ttl, (method, body["result"])


async def test_an_anonymous_callers_identity_carries_its_own_network_on_every_request():
    """The copy of the shared anonymous identity per network is reused between requests: each
    caller must still get its own network, and the shared identity none."""
    from mcp_endpoint.dispatch.dispatcher import Dispatcher

    fresh = Dispatcher()
    first = await fresh.authenticate(None, ("203.0.113.7", 5000))
    again = await fresh.authenticate(None, ("203.0.113.7", 6000))
    other = await fresh.authenticate(None, ("2001:db8:1:2::1", 1))
    assert first.peer == again.peer == "203.0.113.7" and other.peer == "2001:db8:1:2::/64"
    assert first is again and first.viewer is other.viewer is anonymous().viewer
    assert anonymous().peer == "" and (await fresh.authenticate(None, None)).peer == ""
