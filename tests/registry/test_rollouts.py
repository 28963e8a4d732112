"""Staged and percentage rollout: stable buckets, the catalog split, 0 aborts, 100 completes."""

from __future__ import annotations

import pytest

from registry import changes
from registry.errors import ApprovalRequired, InvalidRollout, PublishPermissionDenied
from registry.formats import buckets
from registry.models import AuditEntry, ChangeLogEntry, PromptMessage, ReviewRequest, Rollout
from registry.release import reviews, rollouts
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_template, release

pytestmark = pytest.mark.django_db


def client(name: str, label: str = "production", scope: frozenset[str] = frozenset()) -> Viewer:
    return Viewer(label=label, scope_tags=scope, client_id=1, client_name=name)


def two_versions(text: str = "New take on {{ topic }}.", labels=("production",)):
    """A prompt whose label serves v1, with v2 published but not served."""
    prompt = make_prompt("greet")
    release(prompt, note="v1", labels=labels)
    PromptMessage.objects.filter(prompt=prompt).update(text=text)
    release(prompt, note="v2", labels=())
    return prompt


def served_version(name: str, label: str = "production") -> int:
    return catalog_for(label).get_prompt(client(name, label), "greet", {"topic": "owls"}).version


# ----------------------------------------------------------------------------------- buckets


def test_stable_bucket_is_0_to_99_and_does_not_depend_on_the_process():
    values = [buckets.stable_bucket(f"client-{i}", "greet") for i in range(200)]
    assert all(0 <= v <= 99 for v in values)
    # Fixed values: SHA-256 of the two strings, not Python's per-process randomised hash().
    assert (buckets.stable_bucket("support-bot", "greet"), buckets.stable_bucket("a", "docs://x")) == (59, 6)


def test_anonymous_callers_are_never_in_a_rollout():
    assert not buckets.gets_candidate("", "greet", 100 - 1)


# ----------------------------------------------------------------------------- the split


def test_the_split_is_stable_and_close_to_the_requested_share_over_1000_clients(publisher):
    prompt = two_versions(labels=("staging",))
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=30, acting_user=publisher, note="try")
    names = [f"agent-{i}" for i in range(1000)]
    first = {name: served_version(name, "staging") for name in names}
    share = sum(1 for v in first.values() if v == 2) / len(names)
    assert 0.25 <= share <= 0.35
    again = {name: served_version(name, "staging") for name in names[:200]}
    assert all(again[name] == first[name] for name in again)  # same client, same version


def test_raising_the_percentage_only_adds_clients(publisher):
    prompt = two_versions(labels=("staging",))
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=20, acting_user=publisher)
    names = [f"agent-{i}" for i in range(300)]
    at_20 = {n for n in names if served_version(n, "staging") == 2}
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=60, acting_user=publisher)
    changes.bump_generation()  # on_commit does not fire inside the test transaction: simulate the announcement
    at_60 = {n for n in names if served_version(n, "staging") == 2}
    assert at_20 < at_60


def test_anonymous_callers_get_the_labels_full_version(publisher):
    prompt = two_versions(labels=("staging",))
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=99, acting_user=publisher)
    served = catalog_for("staging").get_prompt(Viewer(label="staging"), "greet", {"topic": "owls"})
    assert served.version == 1
    assert not catalog_for("staging").personalised(Viewer(label="staging"))


def test_lists_get_reads_and_served_version_follow_the_clients_bucket(publisher):
    prompt = two_versions(labels=("staging",))
    prompt.description = "Described in v3"
    prompt.save()
    release(prompt, note="v3", labels=())
    rollouts.set_rollout(prompt, label="staging", version_number=3, percent=50, acting_user=publisher)
    catalog = catalog_for("staging")
    inside = next(n for n in (f"c{i}" for i in range(100)) if buckets.gets_candidate(n, "greet", 50))
    outside = next(n for n in (f"c{i}" for i in range(100)) if not buckets.gets_candidate(n, "greet", 50))
    assert catalog.personalised(client(inside, "staging")) and catalog.personalised(client(outside, "staging"))
    assert catalog.prompts(client(inside, "staging"))[0]["description"] == "Described in v3"
    assert catalog.prompts(client(outside, "staging"))[0]["description"] == "A prompt for tests"
    assert catalog.prompts(Viewer(label="staging"))[0]["description"] == "A prompt for tests"
    assert catalog.variant(client(inside, "staging")) == ("greet@v3",)
    assert catalog.variant(client(outside, "staging")) == ()
    assert catalog.get_prompt(client(inside, "staging"), "greet", {"topic": "x"}).version == 3


def test_resources_and_templates_are_rolled_out_too(publisher):
    resource = make_resource("docs://guide", text="old")
    template = make_template("items://{id}", body="old {{ id }}")
    for entry in (resource, template):
        release(entry, labels=("staging",))
    resource.text = "new"
    resource.save()
    template.body = "new {{ id }}"
    template.save()
    for entry in (resource, template):
        release(entry, labels=())
        rollouts.set_rollout(entry, label="staging", version_number=2, percent=100 - 1, acting_user=publisher)
    catalog = catalog_for("staging")
    inside = next(n for n in (f"c{i}" for i in range(200))
                  if buckets.gets_candidate(n, "docs://guide", 99) and buckets.gets_candidate(n, "items://{id}", 99))
    read = catalog.read_resource(client(inside, "staging"), "docs://guide")
    assert (read.result["contents"][0]["text"], read.version) == ("new", 2)
    templated = catalog.read_resource(client(inside, "staging"), "items://7")
    assert (templated.result["contents"][0]["text"], templated.version) == ("new 7", 2)
    anonymous = catalog.read_resource(Viewer(label="staging"), "items://7")
    assert (anonymous.result["contents"][0]["text"], anonymous.version) == ("old 7", 1)


def test_no_rollout_keeps_the_shared_fast_path(publisher):
    release(make_prompt("greet"))
    catalog = catalog_for("production")
    assert catalog.rolled_out == () and not catalog.personalised(client("bot"))
    assert catalog.prompts(client("bot")) is catalog.prompts(client("other"))  # one cached list


# --------------------------------------------------------------------------- changing it


def test_a_change_of_percent_is_audited_and_recorded_in_the_change_log(publisher):
    prompt = two_versions(labels=("staging",))
    before = ChangeLogEntry.objects.count()
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=10, acting_user=publisher, note="canary")
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=40, acting_user=publisher)
    changes = list(ChangeLogEntry.objects.order_by("id")[before:])
    assert [(c.entry_key, c.label, c.list_changed) for c in changes] == [("greet", "staging", True)] * 2
    audit = list(AuditEntry.objects.filter(action="rollout_changed").order_by("id"))
    assert [a.changes for a in audit] == [
        [{"field": "candidate_version", "before": None, "after": 2}, {"field": "percent", "before": 0, "after": 10}],
        [{"field": "percent", "before": 10, "after": 40}]]
    assert audit[0].actor == publisher and "canary" in audit[0].note


def test_zero_aborts_the_rollout(publisher):
    prompt = two_versions(labels=("staging",))
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=50, acting_user=publisher)
    assert rollouts.set_rollout(prompt, label="staging", version_number=2, percent=0, acting_user=publisher) is None
    assert not Rollout.objects.exists()
    assert all(served_version(f"agent-{i}", "staging") == 1 for i in range(50))
    assert AuditEntry.objects.filter(action="rollout_changed", note__startswith="Aborted").exists()


def test_one_hundred_completes_the_rollout_by_moving_the_label(publisher):
    prompt = two_versions(labels=("staging",))
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=50, acting_user=publisher)
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=100, acting_user=publisher)
    assert not Rollout.objects.exists()
    assert prompt.labels.get(name="staging").version.number == 2
    assert AuditEntry.objects.filter(action="label_move", label="staging", to_version=2).exists()
    assert served_version("anyone", "staging") == 2


@pytest.mark.parametrize("percent", [-1, 101, 50.5, "30", True])
def test_percentages_outside_0_to_100_are_refused(publisher, percent):
    prompt = two_versions(labels=("staging",))
    with pytest.raises(InvalidRollout, match="0 to 100"):
        rollouts.set_rollout(prompt, label="staging", version_number=2, percent=percent, acting_user=publisher)


def test_a_rollout_needs_an_existing_label_version_and_the_publish_permission(publisher, editor):
    prompt = two_versions(labels=("staging",))
    with pytest.raises(InvalidRollout, match="no 'canary' label"):
        rollouts.set_rollout(prompt, label="canary", version_number=2, percent=10, acting_user=publisher)
    with pytest.raises(InvalidRollout, match="no version 9"):
        rollouts.set_rollout(prompt, label="staging", version_number=9, percent=10, acting_user=publisher)
    with pytest.raises(InvalidRollout, match="already serves v1"):
        rollouts.set_rollout(prompt, label="staging", version_number=1, percent=10, acting_user=publisher)
    with pytest.raises(PublishPermissionDenied):
        rollouts.set_rollout(prompt, label="staging", version_number=2, percent=10, acting_user=editor)


# ---------------------------------------------------------------------- protected labels


def test_starting_a_rollout_on_production_needs_approval_or_override(publisher, release_manager):
    prompt = two_versions()
    with pytest.raises(ApprovalRequired):
        rollouts.set_rollout(prompt, label="production", version_number=2, percent=10, acting_user=publisher)
    rollout = rollouts.set_rollout(prompt, label="production", version_number=2, percent=10,
                                   acting_user=release_manager, override_reason="hotfix canary")
    assert rollout.authority == "override: hotfix canary"
    assert AuditEntry.objects.filter(action="override", note="hotfix canary").exists()
    # Once authorised, a publisher may change the share and complete it.
    rollouts.set_rollout(prompt, label="production", version_number=2, percent=60, acting_user=publisher)
    rollouts.set_rollout(prompt, label="production", version_number=2, percent=100, acting_user=publisher)
    assert prompt.labels.get(name="production").version.number == 2


def test_an_approved_rollout_request_starts_the_rollout_and_completing_needs_no_new_review(editor, publisher):
    prompt = two_versions()
    review = reviews.request_publication(prompt, acting_user=editor, note="canary 20%", version_number=2, percent=20)
    reviews.approve(review, acting_user=publisher)
    rollout = Rollout.objects.get()
    assert (rollout.percent, rollout.candidate_version, rollout.authority) == (20, 2, f"review #{review.pk}")
    assert prompt.labels.get(name="production").version.number == 1  # the label itself has not moved
    rollouts.set_rollout(prompt, label="production", version_number=2, percent=100, acting_user=publisher)
    assert prompt.labels.get(name="production").version.number == 2
    assert ReviewRequest.objects.get().status == "approved"


def test_a_partial_rollout_approval_does_not_outlive_a_later_full_release(editor, publisher, second_publisher):
    """v3 approved at 10%, then v4 approved for a full release: the v3 rollout ends with the move, so
    one publisher alone cannot later 'complete' v3 and move production from v4 back to v3."""
    prompt = two_versions()
    PromptMessage.objects.filter(prompt=prompt).update(text="Third take on {{ topic }}.")
    release(prompt, note="v3", labels=())
    partial = reviews.request_publication(prompt, acting_user=editor, note="canary v3", version_number=3, percent=10)
    reviews.approve(partial, acting_user=publisher)
    PromptMessage.objects.filter(prompt=prompt).update(text="Fourth take on {{ topic }}.")
    full = reviews.request_publication(prompt, acting_user=editor, note="v4 for everyone")
    reviews.approve(full, acting_user=second_publisher)
    assert prompt.labels.get(name="production").version.number == 4
    assert not Rollout.objects.exists()  # the v3 rollout ended when production moved
    assert all(served_version(f"agent-{i}") == 4 for i in range(200))
    ended = AuditEntry.objects.get(action="rollout_changed", note__startswith="Ended the rollout of v3")
    assert (ended.label, ended.changes) == ("production", [{"field": "candidate_version", "before": 3, "after": None},
                                                           {"field": "percent", "before": 10, "after": 0}])
    with pytest.raises(ApprovalRequired):
        rollouts.set_rollout(prompt, label="production", version_number=3, percent=100, acting_user=publisher)
    with pytest.raises(ApprovalRequired):
        rollouts.set_rollout(prompt, label="production", version_number=3, percent=50, acting_user=publisher)
    assert prompt.labels.get(name="production").version.number == 4


def test_a_rollouts_authority_covers_only_the_base_it_was_granted_on(editor, publisher):
    """Even a rollout row left behind (e.g. written outside the services) is no authority once the
    label serves something other than what the rollout was approved against."""
    prompt = two_versions()
    review = reviews.request_publication(prompt, acting_user=editor, note="canary", version_number=2, percent=10)
    reviews.approve(review, acting_user=publisher)
    rollout = Rollout.objects.get()
    assert rollout.base_version == 1
    Rollout.objects.filter(pk=rollout.pk).update(base_version=7)  # the label no longer serves the base
    with pytest.raises(ApprovalRequired):
        rollouts.set_rollout(prompt, label="production", version_number=2, percent=100, acting_user=publisher)
    assert prompt.labels.get(name="production").version.number == 1


def test_any_label_move_ends_the_rollouts_on_that_label_only(publisher):
    prompt = two_versions(labels=("staging", "canary"))
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=30, acting_user=publisher)
    rollouts.set_rollout(prompt, label="canary", version_number=2, percent=30, acting_user=publisher)
    from registry.release import services

    PromptMessage.objects.filter(prompt=prompt).update(text="Third take on {{ topic }}.")
    services.publish(prompt, acting_user=publisher, note="v3 to staging", labels=["staging"])
    assert list(Rollout.objects.values_list("label", flat=True)) == ["canary"]


def test_aborting_a_production_rollout_needs_no_review(publisher, release_manager):
    prompt = two_versions()
    rollouts.set_rollout(prompt, label="production", version_number=2, percent=10, acting_user=release_manager,
                         override_reason="canary")
    rollouts.set_rollout(prompt, label="production", version_number=2, percent=0, acting_user=publisher)
    assert not Rollout.objects.exists()


def test_refreshing_only_the_changed_entry_picks_up_the_rollout(publisher):
    from registry.serving.catalogs import refresh_catalog

    prompt = two_versions(labels=("staging",))
    release(make_prompt("other"), labels=("staging",))
    before = catalog_for("staging")
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=40, acting_user=publisher)
    changes.bump_generation()
    after = refresh_catalog("staging", [("prompt", "greet")])
    assert after.prompt_items["greet"].rollout.percent == 40
    assert after.prompt_items["other"] is before.prompt_items["other"]  # untouched entries are reused
    assert [item.key for item in after.rolled_out] == ["greet"]


@pytest.mark.django_db(transaction=True)
def test_clients_are_notified_after_commit_when_the_rollout_changes():
    from registry.signals import registry_changed
    from tests.factories import make_user

    publisher = make_user("Publishers")
    prompt = two_versions(labels=("staging",))
    batches = []
    registry_changed.connect(lambda sender, batch, **kw: batches.append(batch), dispatch_uid="test-rollout-notify",
                             weak=False)
    try:
        rollouts.set_rollout(prompt, label="staging", version_number=2, percent=25, acting_user=publisher)
    finally:
        registry_changed.disconnect(dispatch_uid="test-rollout-notify")
    assert [(c.kind, c.key, c.label, c.list_changed) for b in batches for c in b.changes] == [
        ("prompt", "greet", "staging", True)]


def test_a_rollout_begun_after_the_draft_was_renamed_reaches_its_clients(publisher):
    """The rollout row keeps the entry's draft key of the day ('hello'); the label still serves the
    entry as 'greet': the whole catalog, a refresh of the entry and a cold page all find it by entry."""
    from registry.serving import pages as catalog_pages
    from registry.serving.catalogs import forget_catalogs, load_catalog, refresh_catalog

    prompt = two_versions(labels=("staging",))
    prompt.name = "hello"  # the draft only
    prompt.save()
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=99, acting_user=publisher)
    inside = next(n for n in (f"c{i}" for i in range(100)) if buckets.gets_candidate(n, "greet", 99))
    viewer = client(inside, "staging")
    forget_catalogs()
    whole = load_catalog("staging")
    assert whole.get_prompt(viewer, "greet", {"topic": "owls"}).version == 2
    assert refresh_catalog("staging", [("prompt", "hello")]).get_prompt(viewer, "greet", {"topic": "x"}).version == 2
    changes.bump_generation()
    part = catalog_pages.page_catalog("staging", "prompt", viewer, None, 5)
    assert part.partial and part.variant(viewer) == whole.variant(viewer) == ("greet@v2",)


def test_a_rollout_to_a_version_served_under_another_name_is_refused_but_a_full_move_is_not(publisher):
    """Bucketed clients would list the candidate's name but get, read and page by the label's."""
    prompt = two_versions(labels=("staging",))
    prompt.name = "hello"
    prompt.save()
    release(prompt, note="v3 renamed", labels=())
    with pytest.raises(InvalidRollout, match="served as hello, not greet"):
        rollouts.set_rollout(prompt, label="staging", version_number=3, percent=50, acting_user=publisher)
    assert not Rollout.objects.exists()
    assert rollouts.set_rollout(prompt, label="staging", version_number=3, percent=100, acting_user=publisher) is None
    assert [p["name"] for p in catalog_for("staging").prompts(client("c1", "staging"))] == ["hello"]
