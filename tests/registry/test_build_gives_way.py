"""The background catalog build gives way to requests served beside it, and never starves."""

import asyncio
import sys
import threading
from concurrent.futures import Future

import pytest

from registry import changes
from registry.release import services
from registry.serving import catalogs, warmup, yielding
from tests.factories import make_prompt

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def checkpoints(monkeypatch):
    """Every entry is a checkpoint; each one's pause (seconds) is recorded."""
    paused: list[float] = []
    real = yielding.checkpoint
    monkeypatch.setattr(catalogs, "CHECKPOINT_EVERY", 1)
    monkeypatch.setattr(catalogs, "checkpoint", lambda: paused.append(real()) or paused[-1])
    for index in range(6):
        services.publish(make_prompt(f"entry-{index}"), acting_user=None, note="test")
    changes.bump_generation()
    return paused


def test_a_build_pauses_at_its_checkpoints_while_a_request_is_served(checkpoints):
    with yielding.serving():
        built = warmup.warm("production").result(30)  # a request served throughout: it still ends
    assert len(built.prompt_items) == 6
    assert len(checkpoints) == 6 and all(pause > 0 for pause in checkpoints)
    assert max(checkpoints) < yielding.MAX_PAUSE * 10  # bounded: the build progresses between pauses


def test_a_build_does_not_pause_with_no_request_served(checkpoints):
    warmup.warm("production").result(30)
    assert checkpoints == [0.0] * 6


def test_a_read_of_part_of_the_catalog_never_pauses(checkpoints):
    with yielding.serving(), yielding.building():  # even in a build's thread, with a request served
        part = catalogs.read_entries("production", {"prompt": None})
    assert len(part.prompt_items) == 6
    assert checkpoints == []  # a part passes no checkpoint at all


def test_a_build_does_not_pause_while_a_request_waits_for_it(checkpoints):
    other_request_waiting = threading.Event()
    done = threading.Event()

    def waiting_request() -> None:
        with yielding.serving(), yielding.awaiting_build():
            other_request_waiting.set()
            done.wait(30)

    waiter = threading.Thread(target=waiting_request)
    waiter.start()
    assert other_request_waiting.wait(30)
    try:
        with yielding.serving():  # another request served beside the one waiting
            warmup.warm("production").result(30)
    finally:
        done.set()
        waiter.join(30)
    assert checkpoints == [0.0] * 6


def test_a_build_does_not_pause_while_a_caller_waits_for_the_build_lock(checkpoints, monkeypatch):
    """A change's refresh blocked on the build holds up every request queued behind it on the
    endpoint's database thread: those requests are counted as served, yet wait for the build."""
    real = yielding.checkpoint
    refresh_started: list[threading.Thread] = []

    def first_checkpoint_starts_a_refresh() -> float:
        if not refresh_started:
            thread = threading.Thread(target=catalogs.refresh_catalog, args=("production", [("prompt", "entry-0")]))
            refresh_started.append(thread)
            thread.start()
            while yielding._state["awaited"] == 0:  # the refresh is blocked on the build lock
                pass
        checkpoints.append(real())
        return checkpoints[-1]

    monkeypatch.setattr(catalogs, "checkpoint", first_checkpoint_starts_a_refresh)
    with yielding.serving():
        warmup.warm("production").result(30)
    refresh_started[0].join(30)
    assert len(checkpoints) >= 6 and set(checkpoints) == {0.0}  # the build's six, then the refresh's own


def test_the_switch_interval_is_lowered_while_builds_run_and_restored_after_the_last():
    before = sys.getswitchinterval()
    with yielding.building():
        assert sys.getswitchinterval() == min(before, yielding.BUILD_SWITCH_INTERVAL)
        other = yielding.building()
        done = threading.Event()

        def another_labels_build() -> None:
            with other:
                done.wait(30)

        beside = threading.Thread(target=another_labels_build)
        beside.start()
        done.set()
        beside.join(30)  # another label's build, in a thread beside this one, ended first
        assert sys.getswitchinterval() == min(before, yielding.BUILD_SWITCH_INTERVAL)
    assert sys.getswitchinterval() == before


def test_the_switch_interval_is_restored_when_a_build_fails():
    before = sys.getswitchinterval()
    with pytest.raises(RuntimeError), yielding.building():
        raise RuntimeError("the build broke")
    assert sys.getswitchinterval() == before


def test_a_request_waiting_for_the_build_is_not_counted_as_served():
    with yielding.serving():
        assert yielding.requests_served() == 1
        with yielding.awaiting_build():
            assert yielding.requests_served() == 0
        assert yielding.requests_served() == 1
    assert yielding.requests_served() == 0


def test_waiting_for_the_build_outside_a_request_counts_nothing():
    with yielding.awaiting_build():
        assert yielding.requests_served() == 0
    assert yielding.requests_served() == 0


def test_a_post_is_counted_as_served_while_it_is_handled(monkeypatch):
    from mcp_endpoint.dispatch import dispatcher as dispatch_module
    from mcp_endpoint.dispatch import modern
    from mcp_endpoint.handlers.identity import anonymous

    seen: list[int] = []

    async def handled(*args, **kwargs):
        seen.append(yielding.requests_served())
        return await real(*args, **kwargs)

    real = modern.post
    monkeypatch.setattr(modern, "post", handled)
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {}}'
    asyncio.run(dispatch_module.Dispatcher().post({"mcp-protocol-version": "2026-07-28"}, body, anonymous()))
    assert seen == [1] and yielding.requests_served() == 0


def test_a_get_waiting_for_the_whole_catalog_is_not_counted_meanwhile(monkeypatch):
    from mcp_endpoint.handlers import catalogs as handler_catalogs
    from mcp_endpoint.handlers import reads

    pending: Future = Future()
    while_waiting: list[int] = []
    monkeypatch.setattr(reads.source, "cached_catalog", lambda label: None)
    monkeypatch.setattr(reads.source, "warm_catalog", lambda label: pending)

    async def no_hub() -> None:
        return None

    monkeypatch.setattr(handler_catalogs, "_start_hub", no_hub)

    def finish() -> None:
        while_waiting.append(yielding.requests_served())
        pending.set_result("the catalog")

    async def request() -> object:
        with yielding.serving():
            threading.Timer(0.05, finish).start()
            return await handler_catalogs.get_catalog("production")

    assert asyncio.run(request()) == "the catalog"
    assert while_waiting == [0] and yielding.requests_served() == 0


def test_a_task_started_in_a_request_and_outliving_it_never_counts_it_again():
    async def scenario() -> list[int]:
        seen: list[int] = []
        later = asyncio.Event()

        async def outliving() -> None:  # e.g. a stream's forwarder: it copies the request's context
            await later.wait()
            with yielding.awaiting_build():
                seen.append(yielding.requests_served())
            seen.append(yielding.requests_served())

        with yielding.serving():
            task = asyncio.get_running_loop().create_task(outliving())
        later.set()
        await task
        return seen

    assert asyncio.run(scenario()) == [0, 0] and yielding.requests_served() == 0


def test_a_failed_request_is_no_longer_counted():
    with pytest.raises(ValueError), yielding.serving():
        raise ValueError("the handler broke")
    assert yielding.requests_served() == 0


def test_a_build_still_gives_way_just_after_a_request_ends(checkpoints, monkeypatch):
    """A client walking a list sends its next page at once: the build does not take the GIL back
    in between."""
    monkeypatch.setattr(yielding, "GRACE", 60.0)
    with yielding.serving():
        pass
    warmup.warm("production").result(30)
    assert len(checkpoints) == 6 and all(pause > 0 for pause in checkpoints)


def test_a_build_runs_at_full_speed_once_the_grace_after_the_last_request_is_over(checkpoints, monkeypatch):
    monkeypatch.setattr(yielding, "GRACE", 0.0)
    with yielding.serving():
        pass
    warmup.warm("production").result(30)
    assert checkpoints == [0.0] * 6


def test_a_build_pauses_no_more_once_its_pause_budget_is_spent(checkpoints, monkeypatch):
    """Requests that never stop delay a build by at most the budget: then it runs at full speed."""
    monkeypatch.setattr(yielding, "PAUSE_BUDGET", yielding.MAX_PAUSE * 2.5)
    with yielding.serving():
        warmup.warm("production").result(30)
    assert all(pause > 0 for pause in checkpoints[:3]) and checkpoints[3:] == [0.0] * 3
    assert sum(checkpoints) < yielding.MAX_PAUSE * 2.5 + 0.05
