"""What a cold read asks once per generation, and the creation times it reads as stored text."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.db import connection

from registry import changes
from registry.formats import buckets
from registry.models import PromptMessage, PromptVersion, ResourceVersion
from registry.release import rollouts
from registry.serving import catalogs
from registry.serving import pages as catalog_pages
from registry.serving.items import fallback_names, last_modified
from registry.serving.per_generation import remembered
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, release


def test_an_answer_is_kept_for_its_generation_and_asked_again_after_a_change():
    asked = []

    def ask():
        asked.append(1)
        return len(asked)

    assert remembered(("test", 1), ask) == remembered(("test", 1), ask) == 1
    changes.bump_generation()
    assert remembered(("test", 1), ask) == 2
    assert remembered(("test", 2), ask) == 3  # another question is asked on its own


def test_a_change_committed_while_the_question_runs_retires_its_answer_at_once():
    def ask_while_a_change_commits():
        changes.bump_generation()
        return "read before the change"

    assert remembered(("test", "racing"), ask_while_a_change_commits) == "read before the change"
    assert remembered(("test", "racing"), lambda: "read after it") == "read after it"


@pytest.mark.django_db
def test_a_rollout_started_after_a_cold_read_reaches_the_next_one(publisher, django_capture_on_commit_callbacks):
    prompt = make_prompt("greet")
    release(prompt, note="v1", labels=("staging",))
    PromptMessage.objects.filter(prompt=prompt).update(text="New take on {{ topic }}.")
    release(prompt, note="v2", labels=())
    inside = Viewer(label="staging", client_id=1, client_name=next(
        n for n in (f"c{i}" for i in range(100)) if buckets.gets_candidate(n, "greet", 50)))
    assert not catalogs.rollout_entries(fallback_names("staging"))
    before = catalog_pages.page_catalog("staging", "prompt", inside, None, 10)  # asks, and keeps the answer
    assert before.partial and before.prompt_items["greet"].rollout is None
    generation = changes.generation()
    with django_capture_on_commit_callbacks(execute=True):
        rollouts.set_rollout(prompt, label="staging", version_number=2, percent=50, acting_user=publisher)
    assert changes.generation() > generation  # the committed change retires what was kept
    assert catalogs.rollout_entries(fallback_names("staging"))["prompt"] == {prompt.id}
    after = catalog_pages.page_catalog("staging", "prompt", inside, None, 10)
    assert after.prompt_items["greet"].rollout.percent == 50
    assert after.prompts(inside)[0]["name"] == "greet" and after.variant(inside) == ("greet@v2",)


@pytest.mark.parametrize("stored, expected", [
    ("2026-12-03 20:50:01", "2026-12-03T20:50:01Z"),
    ("2026-12-03 20:50:01.000123", "2026-12-03T20:50:01.000123Z"),
    ("2026-12-03T20:50:01+02:00", "2026-12-03T18:50:01Z"),  # written around the model: parsed
    ("2026-12-03 20:50", "2026-12-03T20:50:00Z"),
])
def test_a_stored_creation_time_lists_as_the_datetime_it_stands_for(stored, expected):
    assert last_modified(stored) == expected


def test_a_creation_time_read_as_a_datetime_lists_the_same():
    for moment in (datetime(2026, 12, 3, 20, 50, 1, tzinfo=UTC), datetime(2026, 12, 3, 20, 50, 1, 123, tzinfo=UTC)):
        assert last_modified(moment) == last_modified(str(moment.replace(tzinfo=None)))


def test_a_stored_time_that_is_no_time_is_refused():
    with pytest.raises(ValueError, match="not a stored time"):
        last_modified("yesterday")


@pytest.mark.django_db
def test_a_cold_page_lists_the_creation_time_the_whole_catalog_does():
    for i in range(3):
        release(make_resource(f"docs://r-{i}"))
    viewer = Viewer()
    whole = catalogs.load_catalog("production").resources(viewer)
    changes.bump_generation()
    part = catalog_pages.page_catalog("production", "resource", viewer, None, 10)
    assert part.partial and part.resources(viewer) == whole
    created = {version.entry.uri: version.created_at for version in ResourceVersion.objects.select_related("entry")}
    listed = {item["uri"]: item["annotations"]["lastModified"]
              for item in part.resources(viewer) if item["uri"] in created}
    assert listed == {uri: moment.astimezone(UTC).isoformat().replace("+00:00", "Z") for uri, moment in created.items()}


@pytest.mark.django_db
def test_the_admins_answer_for_one_entry_sees_a_rollout_begun_where_this_process_did_not_hear_of_it(publisher):
    prompt = make_prompt("greet")
    release(prompt, note="v1", labels=("staging",))
    PromptMessage.objects.filter(prompt=prompt).update(text="New take on {{ topic }}.")
    release(prompt, note="v2", labels=())
    assert catalogs.entry_item("staging", "prompt", prompt.id).rollout is None  # kept: none runs
    generation = changes.generation()
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=50, acting_user=publisher)
    assert changes.generation() == generation  # uncommitted here: as if another process began it
    assert catalogs.entry_item("staging", "prompt", prompt.id).rollout.percent == 50


@pytest.mark.django_db
def test_a_cold_page_leaves_completion_values_unread_and_lists_what_the_whole_catalog_lists():
    prompt = make_prompt("greet", arguments=[
        {"name": "topic", "required": True, "suggestions": "billing\nsecurity"},
        {"name": "tone", "required": False, "type": "enum", "choices": "formal\nwarm"}])
    release(prompt, note="v1")
    part = catalog_pages.page_catalog("production", "prompt", Viewer(), None, 10)
    assert part.partial and part.prompt_items["greet"].suggestions == {}
    whole = catalogs.load_catalog("production")
    assert dict(whole.prompt_items["greet"].suggestions) == {"topic": ("billing", "security"),
                                                             "tone": ("formal", "warm")}
    assert part.prompts(Viewer()) == whole.prompts(Viewer())
    completed = whole.complete(Viewer(), {"type": "ref/prompt", "name": "greet"}, "topic", "b")
    assert completed["values"] == ["billing"]
    with pytest.raises(RuntimeError, match="whole catalog"):  # never a wrong "no such argument"
        part.complete(Viewer(), {"type": "ref/prompt", "name": "greet"}, "topic", "b")


@pytest.mark.django_db
def test_a_cold_page_serves_from_the_snapshot_a_listing_written_around_the_model_as_no_object():
    release(make_prompt("greet"), note="v1")
    cast = "::jsonb" if connection.vendor == "postgresql" else ""
    with connection.cursor() as cursor:  # what a write around the model could leave
        cursor.execute(f"UPDATE {PromptVersion._meta.db_table} SET listing = %s{cast}", ['"not an object"'])
    part = catalog_pages.page_catalog("production", "prompt", Viewer(), None, 10)
    assert [p["name"] for p in part.prompts(Viewer())] == ["greet"]
