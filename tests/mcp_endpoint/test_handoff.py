"""A request's committed changes reach the hub after its response, not while it is being sent."""

from __future__ import annotations

import pytest
from django.core.signals import request_finished, request_started

from mcp_endpoint import handoff
from mcp_endpoint.hub import hub
from registry.changes import Change

pytestmark = pytest.mark.django_db  # Django's own request signal receivers close connections
CHANGE = [Change(7, "prompt", "greet", "production", True)]


def offers(monkeypatch) -> list[tuple[list[Change], float]]:
    seen: list[tuple[list[Change], float]] = []
    monkeypatch.setattr(hub, "submit_threadsafe", lambda changes, delay=0.0: seen.append((changes, delay)))
    return seen


def test_changes_committed_during_a_request_are_handed_to_the_hub_when_it_finishes(monkeypatch):
    seen = offers(monkeypatch)
    request_started.send(sender=None)
    handoff.hand_to_hub(CHANGE)
    assert seen == [(CHANGE, handoff.SAFETY_NET_SECONDS)]  # only the late safety net so far
    request_finished.send(sender=None)
    assert seen[-1] == (CHANGE, 0.0)
    handoff.hand_to_hub(CHANGE)  # after the request: at once
    assert seen[-1] == (CHANGE, 0.0) and len(seen) == 3


def test_changes_committed_outside_a_request_are_handed_to_the_hub_at_once(monkeypatch):
    seen = offers(monkeypatch)
    handoff.hand_to_hub(CHANGE)
    assert seen == [(CHANGE, 0.0)]
