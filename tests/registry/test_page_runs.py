"""Cold list pages come from runs of the list kept until the next change (registry/serving/page_runs.py):
a walk reads the database once a run, not once a page, every page is the catalog's page, and a
change (committed before or during a read) is never missed."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry import changes
from registry.release import services
from registry.serving import catalogs, page_runs
from registry.serving import pages as catalog_pages
from registry.serving.catalogs import load_catalog
from registry.serving.viewer import Viewer
from tests.factories import make_prompt

pytestmark = pytest.mark.django_db
PAGE = 5  # a list request reads a page and one more


def publish(entry, labels=("production",)):
    return services.publish(entry, acting_user=None, note="test", labels=labels)


@pytest.fixture
def sixty(db):
    for i in range(60):
        publish(make_prompt(f"p-{i:02d}", tags="billing" if i % 3 == 0 else ""))


def walk(viewer, *, label="production"):
    """Every page of the prompt list as a list request reads it, from one cold start: (pages,
    queries of each page)."""
    changes.bump_generation()  # as after a start: no fresh catalog, no run
    after, pages, queries = None, [], []
    while True:
        with CaptureQueriesContext(connection) as captured:
            part = catalog_pages.page_catalog(label, "prompt", viewer, after, PAGE + 1)
        assert part.partial and catalogs.cached_catalog(label) is None
        queries.append(len(captured))
        listed = [p["name"] for p in part.prompts(viewer) if after is None or p["name"] > after][:PAGE + 1]
        pages.append(listed[:PAGE])
        if len(listed) <= PAGE:
            return pages, queries
        after = listed[PAGE - 1]


def warm_pages(viewer):
    names = [p["name"] for p in load_catalog(viewer.label).prompts(viewer)]
    return [names[i:i + PAGE] for i in range(0, len(names), PAGE)]


@pytest.mark.parametrize("viewer, pages_of, reads_of", [
    (Viewer(), 12, 4),  # runs of 6, 12, 24, 48 entries for 60
    (Viewer(scope_tags=frozenset({"billing"})), 4, 3),  # runs of 6, 12, 24 of the 20 it sees
], ids=["all", "billing"])
def test_a_cold_walk_reads_the_database_once_a_run_and_lists_the_catalogs_pages(sixty, viewer, pages_of, reads_of):
    pages, queries = walk(viewer)
    assert pages == warm_pages(viewer)
    assert len(pages) == pages_of and queries[0] > 0
    assert len([n for n in queries if n]) == reads_of, queries
    reads = [n for n in queries if n]
    # The same queries for each run, whatever its length; the first also asks what is kept for the
    # generation (registry/serving/per_generation.py: rollouts running, label rows without a key).
    assert len(set(reads[1:])) == 1 and reads[0] == reads[1] + 2, queries


def test_a_page_inside_a_run_makes_no_query(sixty):
    viewer = Viewer()
    changes.bump_generation()
    first = catalog_pages.page_catalog("production", "prompt", viewer, None, PAGE + 1)
    second_read = catalog_pages.page_catalog("production", "prompt", viewer, "p-04", PAGE + 1)  # a run of 12
    with CaptureQueriesContext(connection) as captured:
        inside = catalog_pages.page_catalog("production", "prompt", viewer, "p-09", PAGE + 1)
        cached = catalog_pages.cached_page("production", "prompt", viewer, "p-09", PAGE + 1)
    assert len(captured) == 0
    assert inside is second_read is cached and first is not second_read
    assert catalog_pages.cached_page("production", "prompt", viewer, "p-30", PAGE + 1) is None  # past the run


def test_the_queries_of_a_cold_read_do_not_grow_with_the_registry(db):
    def first_page_queries() -> int:
        changes.bump_generation()
        with CaptureQueriesContext(connection) as captured:
            catalog_pages.page_catalog("production", "prompt", Viewer(), None, PAGE + 1)
        return len(captured)

    for i in range(8):
        publish(make_prompt(f"small-{i}"))
    small = first_page_queries()
    for i in range(80):
        publish(make_prompt(f"large-{i:02d}"))
    assert first_page_queries() == small


def test_a_change_retires_every_run(sixty, django_capture_on_commit_callbacks):
    viewer = Viewer()
    changes.bump_generation()
    catalog_pages.page_catalog("production", "prompt", viewer, None, PAGE + 1)
    catalog_pages.page_catalog("production", "prompt", viewer, "p-04", PAGE + 1)  # holds p-05 .. p-16
    with django_capture_on_commit_callbacks(execute=True):  # the publish commits and is announced
        publish(make_prompt("p-09a"))  # inside the run already read
    part = catalog_pages.page_catalog("production", "prompt", viewer, "p-09", PAGE + 1)
    assert [p["name"] for p in part.prompts(viewer) if p["name"] > "p-09"][:2] == ["p-09a", "p-10"]


def test_a_run_read_while_a_change_commits_is_not_kept(sixty, monkeypatch):
    """The run carries the generation from before its first query: a change announced while it
    was read (which it may have missed) retires it before any later page is cut from it."""
    viewer = Viewer()
    changes.bump_generation()
    real_read = catalogs.read_entries

    def read_then_change(label, ids):
        part = real_read(label, ids)
        changes.bump_generation()  # committed elsewhere while this run was being read
        return part

    monkeypatch.setattr(catalogs, "read_entries", read_then_change)
    part = catalog_pages.page_catalog("production", "prompt", viewer, None, PAGE + 1)
    assert part.generation < changes.generation()  # and so the result cache never serves it as current
    monkeypatch.setattr(catalogs, "read_entries", real_read)
    assert catalog_pages.cached_page("production", "prompt", viewer, None, PAGE + 1) is None


def test_runs_are_kept_per_scope_and_dropped_once_the_catalog_is_fresh(sixty):
    changes.bump_generation()
    everyone, billing = Viewer(), Viewer(scope_tags=frozenset({"billing"}))
    catalog_pages.page_catalog("production", "prompt", everyone, None, PAGE + 1)
    assert catalog_pages.cached_page("production", "prompt", billing, None, PAGE + 1) is None
    assert catalog_pages.cached_page("production", "prompt", everyone, None, PAGE + 1) is not None
    whole = load_catalog("production")
    assert catalog_pages.page_catalog("production", "prompt", everyone, None, PAGE + 1) is whole
    assert page_runs.covering("production", "prompt", everyone, None, PAGE + 1) is None


@pytest.mark.django_db(transaction=True)  # the warm-up reads in a thread of its own, on its own connection
def test_the_warm_up_drops_the_runs_of_its_label():
    from registry.serving import warmup

    for i in range(8):
        publish(make_prompt(f"p-{i}"))
    changes.bump_generation()
    catalog_pages.page_catalog("production", "prompt", Viewer(), None, PAGE + 1)
    assert page_runs.covering("production", "prompt", Viewer(), None, PAGE + 1) is not None
    warmup.warm("production").result(30)
    assert page_runs.covering("production", "prompt", Viewer(), None, PAGE + 1) is None


def test_a_walk_keeps_only_the_runs_it_has_not_passed(sixty):
    """A walk's earlier runs go as soon as a run continues past them, so a cold walk holds two
    runs at most until the catalog is built (the allocator cannot return the memory of runs freed
    only then); pages and reads stay as before."""
    viewer = Viewer()
    pages, queries = walk(viewer)
    assert pages == warm_pages(viewer)
    assert len([n for n in queries if n]) == 4  # runs of 6, 12, 24, 48, as with every run kept
    kept = [run for run in page_runs._runs if run.label == "production" and run.kind == "prompt"]
    assert len(kept) <= 2 and kept[-1].complete


def test_a_run_of_another_scope_is_kept_when_a_walk_passes_its_keys(sixty):
    billing, everyone = Viewer(scope_tags=frozenset({"billing"})), Viewer()
    changes.bump_generation()
    catalog_pages.page_catalog("production", "prompt", billing, None, PAGE + 1)
    for after in (None, "p-04", "p-16", "p-40"):  # a walk of everyone's pages, past the billing run's keys
        catalog_pages.page_catalog("production", "prompt", everyone, after, PAGE + 1)
    assert len(page_runs._current("production", "prompt", billing.scope_tags)) == 1
    assert len(page_runs._current("production", "prompt", everyone.scope_tags)) <= 2


def test_two_walks_pages_apart_each_read_as_a_lone_walk_does(sixty):
    """A walk drops only the run it continued: another walk behind it keeps its own run and its
    doubling (dropping every run passed cost the walk behind a read a page, and reset the one ahead)."""
    viewer = Viewer()
    changes.bump_generation()
    reads = {"ahead": 0, "behind": 0}
    cursors: dict[str, str | None] = {"ahead": None, "behind": None}
    pages: dict[str, list[list[str]]] = {"ahead": [], "behind": []}

    def step(walk):
        after = cursors[walk]
        with CaptureQueriesContext(connection) as captured:
            part = catalog_pages.page_catalog("production", "prompt", viewer, after, PAGE + 1)
        reads[walk] += bool(len(captured))
        listed = [p["name"] for p in part.prompts(viewer) if after is None or p["name"] > after][:PAGE + 1]
        pages[walk].append(listed[:PAGE])
        cursors[walk] = listed[PAGE - 1] if len(listed) > PAGE else "done"

    for _ in range(5):  # the walk ahead starts five pages earlier
        step("ahead")
    while "done" not in (cursors["ahead"], cursors["behind"]) or cursors["ahead"] != cursors["behind"]:
        for walk in ("ahead", "behind"):
            if cursors[walk] != "done":
                step(walk)
    assert pages["ahead"] == pages["behind"] == warm_pages(viewer)
    assert reads["ahead"] == 4 and reads["behind"] <= 4, reads  # runs of 6, 12, 24, 48 at most, as alone
