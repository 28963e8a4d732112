"""What keeps a large catalog small: slotted items, values shared across items, and a full
build handing its freed memory back (bench/memory.py measures the effect)."""

import datetime
import sys

import pytest

from registry.release import services
from registry.serving import catalogs, heap, items
from registry.serving.catalogs import catalog_for, refresh_catalog
from registry.serving.items import ITEM_BUILDERS, Row
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource

ANYONE = Viewer()
WHEN = datetime.datetime(2026, 12, 2, 12, 0, tzinfo=datetime.UTC)


def prompt_row(entry_id, name, arguments, suggestions, label="production"):
    listing = {"item": {"name": name, "description": f"about {name}", "arguments": arguments},
               "suggestions": suggestions, "tags": ["a"], "resource_arguments": []}
    return Row(entry_id, "".join(label), entry_id, 1, listing, None)  # a label string of its own, as rows bring


def arguments():  # a fresh decode each time, as every row's listing is
    return [{"name": "topic", "description": "What", "required": True}, {"name": "tone", "required": False}]


def suggestions():
    return {"topic": ["billing", "search"], "tone": ["warm"]}


def test_items_have_no_per_instance_dict():
    prompt = ITEM_BUILDERS["prompt"](prompt_row(1, "p", arguments(), suggestions()))
    resource = ITEM_BUILDERS["resource"](Row(2, "production", 2, 1, {
        "item": {"uri": "docs://a", "name": "a"}, "content": {"uri": "docs://a", "sha256": "0" * 64}}, WHEN))
    for item in (prompt, resource):
        assert not hasattr(item, "__dict__")
        with pytest.raises(AttributeError):
            item.version = 2  # still frozen


def test_prompts_with_equal_arguments_share_one_list_and_one_suggestion_mapping():
    items.forget_shared()
    first = ITEM_BUILDERS["prompt"](prompt_row(1, "p1", arguments(), suggestions()))
    second = ITEM_BUILDERS["prompt"](prompt_row(2, "p2", arguments(), suggestions()))
    assert first.listing["arguments"] is second.listing["arguments"]
    assert first.suggestions is second.suggestions
    assert first.label is second.label  # the label name is one string, not one per row
    assert first.listing["name"] == "p1" and second.listing["name"] == "p2"


def test_values_equal_in_python_but_not_in_json_are_not_shared():
    items.forget_shared()
    required_true = ITEM_BUILDERS["prompt"](prompt_row(1, "p1", [{"name": "n", "required": True}], {}))
    required_one = ITEM_BUILDERS["prompt"](prompt_row(2, "p2", [{"name": "n", "required": 1}], {}))
    other = ITEM_BUILDERS["prompt"](prompt_row(3, "p3", [{"name": "m", "required": True}], {}))
    assert required_true.listing["arguments"] is not required_one.listing["arguments"]
    assert required_one.listing["arguments"][0]["required"] is not True
    assert other.listing["arguments"] == [{"name": "m", "required": True}]


def test_a_resource_item_is_completed_in_place_with_one_uri_string():
    listing = {"item": {"uri": "docs://Readme", "name": "readme"},
               "content": {"uri": "docs://Readme", "mimeType": "text/plain", "sha256": "0" * 64}}
    item = ITEM_BUILDERS["resource"](Row(1, "production", 1, 1, listing, WHEN))
    assert item.listing is listing["item"] and item.ref is listing["content"]
    assert item.listing["uri"] is item.ref["uri"] is item.uri
    assert item.listing["annotations"] == {"lastModified": "2026-12-02T12:00:00Z"}


@pytest.mark.django_db
def test_a_full_build_hands_freed_memory_back_and_a_refresh_does_not(monkeypatch):
    calls = []
    monkeypatch.setattr(catalogs, "release_freed_memory", lambda: calls.append(1))
    services.publish(make_prompt("p"), acting_user=None, note="t", labels=("production",))
    services.publish(make_resource("docs://r"), acting_user=None, note="t", labels=("production",))
    catalog_for("production")
    assert calls == [1]
    refresh_catalog("production", [("prompt", "p")])
    assert calls == [1]
    refresh_catalog("production", [("prompt", "*")])  # a bulk change rebuilds everything
    assert calls == [1, 1]


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="malloc_trim is glibc's")
def test_releasing_freed_memory_calls_malloc_trim_on_glibc():
    import platform

    if platform.libc_ver()[0] != "glibc":
        pytest.skip("not glibc")
    assert heap.release_freed_memory() is True


@pytest.mark.django_db
def test_a_build_picks_and_builds_one_entry_at_a_time(monkeypatch):
    """Holding every decoded row until all were read left their memory as holes between the items."""
    seen = []
    real = catalogs.pick_served

    def pick_one_entry(rows, label):
        rows = list(rows)
        seen.append({row.entry_id for row in rows})
        return real(rows, label)

    monkeypatch.setattr(catalogs, "pick_served", pick_one_entry)
    first, second = make_prompt("p1"), make_prompt("p2")
    services.publish(first, acting_user=None, note="t", labels=("production",))
    services.publish(second, acting_user=None, note="t", labels=("production",))
    first.description = "staged"
    first.save()
    services.publish(first, acting_user=None, note="t", labels=("staging",))
    catalog = catalog_for("staging")
    assert [len(ids) for ids in seen if ids] and all(len(ids) == 1 for ids in seen)
    assert {p["name"]: p["description"] for p in catalog.prompts(ANYONE)} == {
        "p1": "staged", "p2": "A prompt for tests"}


def test_equal_arguments_in_another_key_order_are_not_shared():
    """Sharing never changes what a client is shown: each item keeps its own key order."""
    items.forget_shared()
    first = ITEM_BUILDERS["prompt"](prompt_row(1, "p1", [{"name": "n", "required": True}], {}))
    second = ITEM_BUILDERS["prompt"](prompt_row(2, "p2", [{"required": True, "name": "n"}], {}))
    assert first.listing["arguments"] is not second.listing["arguments"]
    assert list(second.listing["arguments"][0]) == ["required", "name"]


def test_a_value_beyond_plain_json_is_kept_as_it_is_not_shared():
    items.forget_shared()
    huge = [{"name": "n", "default": 2**70}]
    first = ITEM_BUILDERS["prompt"](prompt_row(1, "p1", huge, {}))
    second = ITEM_BUILDERS["prompt"](prompt_row(2, "p2", [{"name": "n", "default": 2**70}], {}))
    assert first.listing["arguments"] == second.listing["arguments"] == huge
    assert first.listing["arguments"] is not second.listing["arguments"]


def test_a_list_and_a_tuple_of_the_same_values_are_not_shared():
    items.forget_shared()
    as_list = items._shared_value(["a", "b"])
    as_tuple = items._shared_value(("a", "b"))
    assert isinstance(as_list, list) and isinstance(as_tuple, tuple)
