"""The catalog consistency check: no false alarms on a consistent catalog, and it names what
is stale (a false alarm would rebuild and announce the same entries every check)."""

from __future__ import annotations

import pytest

from registry import changes
from registry.models import Prompt, PromptMessage
from registry.release import services
from registry.release.rollouts import set_rollout
from registry.serving.catalogs import load_catalog
from registry.serving.consistency import served_fingerprint, stale_keys
from tests.factories import make_prompt, make_resource, make_template

pytestmark = pytest.mark.django_db


def publish(entry, labels=("production",)):
    services.publish(entry, acting_user=None, note="t", labels=labels, override_reason="t")
    return entry


def fresh(label):
    changes.bump_generation()
    return load_catalog(label)


@pytest.fixture
def registry():
    prompt = publish(make_prompt("greet"))
    publish(make_resource("docs://guide", tags="internal"))
    publish(make_template("items://{id}"))
    publish(make_prompt("staged"), labels=("production", "staging"))
    PromptMessage.objects.filter(prompt=prompt).update(text="Candidate {{ topic }}")
    publish(prompt, labels=())
    set_rollout(prompt, label="production", version_number=2, percent=30, acting_user=None, note="canary")
    return prompt


@pytest.mark.parametrize("label", ["production", "staging"])
def test_a_consistent_catalog_is_reported_consistent(registry, label):
    Prompt.objects.filter(pk=registry.pk).update(name="renamed-draft")  # a draft rename serves nothing new
    assert stale_keys(fresh(label), served_fingerprint(label)) == []


def test_a_label_move_the_catalog_missed_is_reported_stale(registry):
    catalog = fresh("production")
    staged = Prompt.objects.get(name="staged")
    PromptMessage.objects.filter(prompt=staged).update(text="New {{ topic }}")
    publish(staged)
    assert stale_keys(catalog, served_fingerprint("production")) == [("prompt", "staged")]


@pytest.mark.parametrize("label", ["production", "staging"])
def test_composed_entries_are_consistent_with_their_snippet_rows_and_a_missed_snippet_move_is_stale(label):
    from registry.models import Snippet
    from tests.factories import make_snippet

    snippet = publish(make_snippet("style", text="Be brief."))
    publish(make_snippet("unused", text="Never included."), labels=("production", "staging"))
    publish(make_prompt("reply", messages=[{"role": "user", "kind": "text", "text": "{{> style }} {{ topic }}"}]),
            labels=("production", "staging"))
    Snippet.objects.filter(pk=snippet.pk).update(text="Be warm.")
    publish(snippet, labels=("staging",))  # v2 on staging; production keeps v1
    catalog = fresh(label)
    assert stale_keys(catalog, served_fingerprint(label)) == []
    Snippet.objects.filter(pk=snippet.pk).update(text="Be kind.")
    publish(Snippet.objects.get(pk=snippet.pk), labels=(label,))  # v3, which the catalog has not heard of
    assert stale_keys(catalog, served_fingerprint(label)) == [("snippet", "style")]


def test_a_catalog_that_resolved_no_reference_does_not_compare_snippet_rows(registry):
    from tests.factories import make_snippet

    catalog = fresh("production")
    publish(make_snippet("style"))
    assert catalog.snippets is None and stale_keys(catalog, served_fingerprint("production")) == []
