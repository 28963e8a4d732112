"""A request's committed changes reach the hub after its response, not while it is being sent."""

from __future__ import annotations

import asyncio

import pytest
from django.core.signals import request_finished, request_started

from mcp_endpoint.notify import handoff
from mcp_endpoint.notify.hub import Hub, hub
from registry.changes import Change

CHANGE = [Change(7, "prompt", "greet", "production", True)]


def offers(monkeypatch) -> list[tuple[str, list[Change]]]:
    seen: list[tuple[str, list[Change]]] = []
    monkeypatch.setattr(hub, "submit_threadsafe", lambda changes, release=False: seen.append(
        ("release" if release else "submit", changes)))
    monkeypatch.setattr(hub, "hold_threadsafe", lambda changes, seconds: seen.append(("hold", changes)))
    return seen


@pytest.mark.django_db  # Django's own request signal receivers close connections
def test_changes_committed_during_a_request_are_held_and_released_when_it_finishes(monkeypatch):
    seen = offers(monkeypatch)
    request_started.send(sender=None)
    handoff.hand_to_hub(CHANGE)
    assert seen == [("hold", CHANGE)]
    request_finished.send(sender=None)
    assert seen[-1] == ("release", CHANGE)
    handoff.hand_to_hub(CHANGE)  # after the request: at once
    assert seen[-1] == ("submit", CHANGE) and len(seen) == 3


def test_changes_committed_outside_a_request_are_handed_to_the_hub_at_once(monkeypatch):
    seen = offers(monkeypatch)
    handoff.hand_to_hub(CHANGE)
    assert seen == [("submit", CHANGE)]


async def test_held_changes_arriving_another_way_wait_for_their_release(monkeypatch):
    """This process's own channel-layer event (or the poller) must not start the fan-out early."""
    local = Hub()
    local.loop = asyncio.get_running_loop()
    delivered: list[list[int]] = []

    async def deliver(batch):
        delivered.append([c.id for c in batch])

    monkeypatch.setattr(local, "_deliver", deliver)
    local.lock = asyncio.Lock()
    local.hold_threadsafe(CHANGE, 5)
    await asyncio.sleep(0.01)
    await local.process(CHANGE)  # e.g. from the channel layer
    assert delivered == []
    local.submit_threadsafe(CHANGE, release=True)
    await asyncio.sleep(0.01)
    assert delivered == [[7]] and not local.held


class _SlowLayer:
    """A channel layer whose group_send waits until the test lets it go."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.sent: list[dict] = []

    async def group_send(self, group, event):
        await self.release.wait()
        self.sent.append(event)


async def test_the_committing_thread_does_not_wait_for_the_channel_layer(monkeypatch):
    """The publishing request hands the cross-worker send to the hub's loop and returns at once."""
    import threading

    from mcp_endpoint.notify import intake
    from registry.changes import ChangeBatch

    layer = _SlowLayer()
    monkeypatch.setattr(intake, "channel_layer", lambda: layer)
    monkeypatch.setattr(intake, "in_memory", lambda layer: False)
    monkeypatch.setattr(hub, "loop", asyncio.get_running_loop())
    monkeypatch.setattr(hub, "submit_threadsafe", lambda changes: None)
    batch = ChangeBatch([Change(1, "resource", "docs://x", "production", False)])
    committing = threading.Thread(target=handoff.forward_registry_changes, args=(ChangeBatch,),
                                  kwargs={"batch": batch}, daemon=True)
    committing.start()
    for _ in range(500):  # the loop stays free meanwhile, so a send it waited for could still finish
        if not committing.is_alive():
            break
        await asyncio.sleep(0.01)
    assert not committing.is_alive() and layer.sent == []  # returned before the send completed
    layer.release.set()
    for _ in range(100):
        if layer.sent:
            break
        await asyncio.sleep(0.01)
    assert layer.sent == [{"type": "registry.changed", "changes": [[1, "resource", "docs://x", "production", False]]}]
