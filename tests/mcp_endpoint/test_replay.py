"""What a resumed 2025 GET stream replays after ``Last-Event-ID``."""

from __future__ import annotations

import pytest

from mcp_endpoint.notify.diff import PROMPTS_CHANGED, RESOURCE_UPDATED, RESOURCES_CHANGED
from mcp_endpoint.notify.replay import changed_since, everything
from registry.models import ChangeLogEntry
from registry.release import services
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_template

pytestmark = pytest.mark.django_db

DOC = "docs://guide"
SECRET = "docs://secret"


@pytest.fixture
def served():
    for entry in (make_prompt("greet"), make_resource(DOC), make_resource(SECRET, tags="internal"),
                  make_template("items://{id}")):
        services.publish(entry, acting_user=None, note="t", labels=("production",), override_reason="t")
    return ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True).first()


def change(kind, key, label="production"):
    return ChangeLogEntry.objects.create(entry_kind=kind, entry_key=key, label=label, list_changed=True).id


def test_a_resource_change_replays_list_changed_and_updated_for_a_subscribed_uri_only(served):
    change("resource", DOC)
    assert changed_since(str(served), Viewer(), {DOC, "docs://other"}) == [
        (RESOURCES_CHANGED, None), (RESOURCE_UPDATED, {"uri": DOC})]


def test_changes_are_deduplicated_and_only_the_kinds_that_changed_are_replayed(served):
    for _ in range(3):
        change("prompt", "greet")
    assert changed_since(str(served), Viewer(), {DOC}) == [(PROMPTS_CHANGED, None)]


def test_a_template_change_replays_updated_for_subscribed_uris_it_serves(served):
    change("template", "items://{id}")
    assert changed_since(str(served), Viewer(), {"items://7", DOC}) == [
        (RESOURCES_CHANGED, None), (RESOURCE_UPDATED, {"uri": "items://7"})]


def test_nothing_since_the_position_replays_nothing(served):
    assert changed_since(str(served), Viewer(), {DOC}) == []


def test_another_labels_change_and_an_out_of_scope_entry_are_not_replayed(served):
    change("prompt", "greet", label="staging")
    change("resource", SECRET)
    assert changed_since(str(served), Viewer(scope_tags=frozenset({"public"})), {SECRET}) == []
    assert changed_since(str(served), Viewer(label="staging"), set()) == [  # staging's own, and all it sees
        (PROMPTS_CHANGED, None), (RESOURCES_CHANGED, None)]


@pytest.mark.parametrize("position", ["not-a-number", "-5", "999999999"])
def test_an_unusable_position_replays_the_safe_over_approximation(served, position):
    assert changed_since(position, Viewer(), {DOC}) == everything({DOC}) == [
        (PROMPTS_CHANGED, None), (RESOURCES_CHANGED, None), (RESOURCE_UPDATED, {"uri": DOC})]


def test_a_position_older_than_the_retained_change_log_replays_everything(served):
    first = ChangeLogEntry.objects.order_by("id").values_list("id", flat=True).first()
    ChangeLogEntry.objects.filter(id__lte=first + 1).delete()  # pruned
    assert changed_since(str(first - 1), Viewer(), {DOC}) == everything({DOC})


def test_more_rows_than_the_replay_limit_replays_everything(served, settings):
    from mcp_endpoint.settings import mcp_settings

    settings.MCP_ENDPOINT = {"REPLAY_LIMIT": 2}
    mcp_settings.reload()
    try:
        for _ in range(3):
            change("prompt", "greet")
        assert changed_since(str(served), Viewer(), set()) == everything(set())
    finally:
        mcp_settings.reload()


def test_a_change_replays_updated_for_the_dynamic_resources_it_alters(served):
    recent, greet_log, other_log = "registry://changes/recent", "registry://prompts/greet/changelog", \
        "registry://prompts/other/changelog"
    change("resource", SECRET)
    assert changed_since(str(served), Viewer(scope_tags=frozenset({"public"})), {recent}) == []
    assert changed_since(str(served), Viewer(), {recent}) == [
        (RESOURCES_CHANGED, None), (RESOURCE_UPDATED, {"uri": recent})]
    position = change("prompt", "greet", label="staging")
    assert changed_since(str(position - 1), Viewer(), {recent, greet_log, other_log}) == [
        (RESOURCE_UPDATED, {"uri": recent}), (RESOURCE_UPDATED, {"uri": greet_log})]
