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
