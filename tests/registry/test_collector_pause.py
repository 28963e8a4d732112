"""A cold run is read with the cyclic collector paused, and the pause leaves it as it was found."""

from __future__ import annotations

import gc
import threading

import pytest

from registry import changes
from registry.serving import catalogs
from registry.serving import pages as catalog_pages
from registry.serving.heap import collector_paused
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, release


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_the_collector_resumes_only_when_the_last_overlapping_pause_ends(collector_on):
    first_inside, second_may_end = threading.Event(), threading.Event()

    def other_read():
        with collector_paused():
            first_inside.set()
            second_may_end.wait(5)

    other = threading.Thread(target=other_read)
    with collector_paused():
        other.start()
        assert first_inside.wait(5)
        assert not gc.isenabled()
    assert not gc.isenabled()  # the other thread's read still runs
    second_may_end.set()
    other.join(5)
    assert gc.isenabled()


def test_a_pause_never_turns_on_a_collector_found_off(collector_on):
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


def test_a_pause_ends_when_its_read_fails(collector_on):
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("the database went away")
    assert gc.isenabled()


@pytest.mark.django_db
def test_a_cold_page_reads_its_run_with_the_collector_paused(collector_on, monkeypatch):
    release(make_prompt("greet"), note="v1")
    changes.bump_generation()  # no fresh catalog: the page is read cold
    seen = []
    real = catalogs.read_entries

    def read_entries(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(catalogs, "read_entries", read_entries)
    part = catalog_pages.page_catalog("production", "prompt", Viewer(), None, 10)
    assert part.partial and "greet" in part.prompt_items
    assert seen == [False]
    assert gc.isenabled()
