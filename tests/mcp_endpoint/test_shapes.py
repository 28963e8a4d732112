from mcp_endpoint.wire import shapes

PROMPT = {"name": "p", "title": "P", "description": "d", "icons": [{"src": "x"}],
          "arguments": [{"name": "a", "title": "A", "required": True}]}
RESOURCE = {"uri": "x://1", "name": "one", "title": "One",
            "annotations": {"audience": ["user"], "lastModified": "2026-01-01T00:00:00Z"}}
LINK = {"type": "resource_link", "uri": "x://1", "name": "one", "title": "One"}


def test_newest_revisions_get_items_unchanged():
    assert shapes.shape_items([PROMPT], "2025-11-25") == [PROMPT]
    assert shapes.shape_items([PROMPT], "2026-07-28") == [PROMPT]


def test_2025_03_26_loses_titles_last_modified_and_icons():
    (p,) = shapes.shape_items([PROMPT], "2025-03-26")
    assert "title" not in p and "icons" not in p and "title" not in p["arguments"][0]
    (r,) = shapes.shape_items([RESOURCE], "2025-03-26")
    assert r["annotations"] == {"audience": ["user"]}
    assert PROMPT["title"] == "P"  # input untouched


def test_2025_06_18_keeps_titles_but_drops_icons():
    (p,) = shapes.shape_items([PROMPT], "2025-06-18")
    assert p["title"] == "P" and "icons" not in p


def test_resource_link_becomes_a_text_block_naming_the_uri_for_2025_03_26():
    block = shapes.shape_block(LINK, "2025-03-26")
    assert block["type"] == "text" and "x://1" in block["text"]
    assert shapes.shape_block(LINK, "2025-06-18")["type"] == "resource_link"


def test_server_info_fields_follow_the_revision():
    info = {"name": "n", "version": "1", "title": "T", "description": "D", "websiteUrl": "https://x"}
    assert shapes.shape_server_info(info, "2025-11-25") == info
    assert shapes.shape_server_info(info, "2025-06-18") == {"name": "n", "version": "1", "title": "T"}
    assert shapes.shape_server_info(info, "2025-03-26") == {"name": "n", "version": "1"}


def test_modern_results_get_result_type_server_info_and_only_cacheable_ones_caching_hints():
    plain = shapes.finalize_modern({"messages": []}, {"name": "n", "version": "1"})
    assert plain["resultType"] == "complete" and "ttlMs" not in plain
    assert plain["_meta"]["io.modelcontextprotocol/serverInfo"] == {"name": "n", "version": "1"}
    cached = shapes.finalize_modern({"prompts": []}, {"name": "n"}, cache=(60000, "private"))
    assert cached["ttlMs"] == 60000 and cached["cacheScope"] == "private"
