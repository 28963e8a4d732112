"""Long id lists are written into the SQL as integer literals (registry/serving/id_lists.py): the
same rows as Django's `__in`, nothing but integers in the text, and a cold part read by them is
the whole catalog's part."""

from dataclasses import replace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry.models import PromptLabel
from registry.release import services
from registry.serving import catalogs
from registry.serving.id_lists import LITERAL_FROM, id_in
from registry.serving.viewer import Viewer
from tests.factories import make_prompt

pytestmark = pytest.mark.django_db


@pytest.fixture
def many(db):
    for i in range(LITERAL_FROM + 16):
        services.publish(make_prompt(f"p-{i:03d}"), acting_user=None, note="test", labels=("production",))
    return sorted(PromptLabel.objects.values_list("entry_id", flat=True))


@pytest.mark.parametrize("size", [0, 3, LITERAL_FROM, LITERAL_FROM + 10])
def test_the_condition_matches_what_the_in_lookup_matches(many, size):
    ids = many[5:5 + size] + many[5:7] + [10 ** 9]  # duplicates and an id nobody has
    expected = list(PromptLabel.objects.filter(entry_id__in=ids).order_by("id").values_list("id", flat=True))
    condition = id_in(PromptLabel, "entry_id", ids)
    got = list(PromptLabel.objects.filter(condition).order_by("id").values_list("id", flat=True))
    assert got == expected


def test_an_empty_list_matches_nothing(many):
    assert not PromptLabel.objects.filter(id_in(PromptLabel, "entry_id", [])).exists()


def test_a_long_list_is_written_as_integers_and_refuses_anything_else(many):
    with CaptureQueriesContext(connection) as captured:
        list(PromptLabel.objects.filter(id_in(PromptLabel, "entry_id", many)))
    sql = captured.captured_queries[-1]["sql"]
    assert ",".join(map(str, many)) in sql
    with pytest.raises(ValueError):
        id_in(PromptLabel, "entry_id", [*many, "1) OR (1=1"])


def test_a_part_read_by_a_long_id_list_holds_the_whole_catalogs_items(many):
    whole = catalogs.load_catalog("production")
    part = catalogs.read_entries("production", {"prompt": many[:LITERAL_FROM + 8]})
    assert len(part.prompt_items) == LITERAL_FROM + 8
    for key, item in part.prompt_items.items():
        # A part never answers a completion, so it leaves the suggestions unread; the rest is the same.
        assert item.suggestions == {}
        assert replace(item, suggestions=whole.prompt_items[key].suggestions) == whole.prompt_items[key]
    assert part.prompts(Viewer()) == [p for p in whole.prompts(Viewer()) if p["name"] in part.prompt_items]
