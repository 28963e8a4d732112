import pytest

from mcp_endpoint.wire import errors
from mcp_endpoint.wire.pagination import decode_cursor, encode_cursor, paginate

SECRET = b"k" * 32
ITEMS = [{"name": f"p{i:03d}"} for i in range(250)]


def pages(items, **kw):
    cursor, out = None, []
    while True:
        page, cursor = paginate(items, kind="prompts/list", key="name", cursor=cursor, page_size=100,
                                secret=SECRET, sorted_by_key=True, **kw)
        out.append(page)
        if cursor is None:
            return out


def test_pages_cover_every_item_once_and_the_last_page_has_no_cursor():
    got = pages(ITEMS)
    assert [len(p) for p in got] == [100, 100, 50]
    assert [it["name"] for p in got for it in p] == [it["name"] for it in ITEMS]


def test_cursor_resumes_after_the_last_key_even_when_items_were_inserted_before_it():
    _, cursor = paginate(ITEMS, kind="prompts/list", key="name", cursor=None, page_size=100,
                             secret=SECRET, sorted_by_key=True)
    changed = sorted([*ITEMS, {"name": "a-new-first"}], key=lambda it: it["name"])
    second, _ = paginate(changed, kind="prompts/list", key="name", cursor=cursor, page_size=100,
                         secret=SECRET, sorted_by_key=True)
    assert second[0]["name"] == "p100"


def test_forged_cursor_is_invalid_params():
    cursor = encode_cursor(SECRET, "prompts/list", 100, "p099")
    body, _, sig = cursor.partition(".")
    forged = encode_cursor(b"other-secret", "prompts/list", 0, "p000")
    for bad in (body + "." + sig[:-2] + "AA", forged, "garbage", "", 12):
        with pytest.raises(errors.InvalidParams):
            decode_cursor(SECRET, "prompts/list", bad)


def test_cursor_minted_for_another_list_is_rejected():
    cursor = encode_cursor(SECRET, "resources/list", 100, "x")
    with pytest.raises(errors.InvalidParams):
        decode_cursor(SECRET, "prompts/list", cursor)


def test_unsorted_lists_resume_after_the_named_key():
    items = [{"uriTemplate": t} for t in ("z://{a}", "a://{b}", "m://{c}")]
    page, cursor = paginate(items, kind="t", key="uriTemplate", cursor=None, page_size=2, secret=SECRET,
                            sorted_by_key=False)
    rest, done = paginate(items, kind="t", key="uriTemplate", cursor=cursor, page_size=2, secret=SECRET,
                          sorted_by_key=False)
    assert [i["uriTemplate"] for i in page + rest] == ["z://{a}", "a://{b}", "m://{c}"]
    assert done is None


def test_a_partial_list_continues_the_cursors_offset():
    """Items read from the database start after the cursor's key: the next cursor is the one the
    whole list gives."""
    _, first = paginate(ITEMS, kind="prompts/list", key="name", cursor=None, page_size=100, secret=SECRET,
                        sorted_by_key=True)
    _, whole = paginate(ITEMS, kind="prompts/list", key="name", cursor=first, page_size=100, secret=SECRET,
                        sorted_by_key=True)
    page, partial = paginate(ITEMS[100:201], kind="prompts/list", key="name", cursor=first, page_size=100,
                             secret=SECRET, sorted_by_key=True, partial=True)
    assert page == ITEMS[100:200] and partial == whole
    assert decode_cursor(SECRET, "prompts/list", partial) == (200, "p199")
