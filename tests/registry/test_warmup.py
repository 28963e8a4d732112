"""The background build of a label's catalog: one at a time, never of a fresh catalog, and
restarted for callers that come after a change."""

import threading

import pytest

from registry import changes
from registry.release import services
from registry.serving import catalogs, warmup
from tests.factories import make_prompt

pytestmark = pytest.mark.django_db(transaction=True)


def publish(name):
    services.publish(make_prompt(name), acting_user=None, note="test")


def test_a_fresh_catalog_is_handed_back_without_a_build(monkeypatch):
    publish("greet")
    whole = catalogs.load_catalog("production")
    monkeypatch.setattr(threading.Thread, "start", lambda self: pytest.fail("started a build"))
    assert warmup.warm("production").result(0) is whole


def test_callers_during_one_build_share_it(monkeypatch):
    publish("greet")
    changes.bump_generation()
    release, builds = threading.Event(), []
    real = catalogs.load_catalog

    def held(label):
        builds.append(label)
        release.wait(30)
        return real(label)

    monkeypatch.setattr(catalogs, "load_catalog", held)
    first, second = warmup.warm("production"), warmup.warm("production")
    release.set()
    assert first is second and first.result(30).prompt_items.keys() == {"greet"}
    assert builds == ["production"]


def test_a_caller_after_a_change_gets_a_build_begun_after_it(monkeypatch):
    publish("greet")
    changes.bump_generation()
    read, release = threading.Event(), threading.Event()
    real = catalogs.load_catalog

    def read_then_held(label):
        built = real(label)
        read.set()
        release.wait(30)
        return built

    monkeypatch.setattr(catalogs, "load_catalog", read_then_held)
    early = warmup.warm("production")
    assert read.wait(30)
    publish("later")  # committed while the early build is still under way
    monkeypatch.setattr(catalogs, "load_catalog", real)
    late = warmup.warm("production")
    release.set()
    assert late is not early
    assert "later" not in early.result(30).prompt_items
    assert "later" in late.result(30).prompt_items
    assert catalogs.cached_catalog("production") is late.result()


def test_a_failed_build_is_reported_to_its_callers_and_the_next_call_builds_again(monkeypatch):
    publish("greet")
    changes.bump_generation()
    monkeypatch.setattr(catalogs, "load_catalog", lambda label: (_ for _ in ()).throw(RuntimeError("db down")))
    with pytest.raises(RuntimeError):
        warmup.warm("production").result(30)
    monkeypatch.undo()
    assert "greet" in warmup.warm("production").result(30).prompt_items
