"""Changes made outside the services (shell, scripts) still reach clients, the change log and the audit log."""

import json

import pytest
from django.core import serializers
from django.core.management import call_command
from django.utils import timezone

from registry.errors import BulkUpdateRefused
from registry.models import (
    AuditEntry,
    ChangeLogEntry,
    McpClient,
    Prompt,
    PromptLabel,
    PromptVersion,
    Resource,
    ResourceLabel,
    Rollout,
)
from registry.release import rollouts, services
from registry.serving import clients
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
from registry.signals import registry_changed
from tests.factories import make_prompt, make_resource

ANYONE = Viewer()


@pytest.fixture
def announced():
    """(kind, key, label) of every announced change, one list per announcement."""
    batches: list[list[tuple[str, str, str]]] = []

    def receiver(sender, batch, **kwargs):
        batches.append([(c.kind, c.key, c.label) for c in batch.changes])

    registry_changed.connect(receiver, dispatch_uid="test-receivers-announced", weak=False)
    yield batches
    registry_changed.disconnect(dispatch_uid="test-receivers-announced")


def two_versions(name="greet"):
    """A prompt whose production label serves v2 (v1 exists), published by the operator."""
    prompt = make_prompt(name)
    services.publish(prompt, acting_user=None, note="v1")
    message = prompt.messages.get()
    message.text = "Second take on {{ topic }}."
    message.save()
    services.publish(prompt, acting_user=None, note="v2")
    return prompt


def rendered(name="greet"):
    result = catalog_for("production").get_prompt(ANYONE, name, {"topic": "owls"}).result
    return result["messages"][0]["content"]["text"]


@pytest.mark.django_db
def test_moving_a_label_with_save_records_audits_announces_and_is_served(announced, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # as if the setup had committed
        prompt = two_versions()
    assert rendered() == "Second take on owls."
    changes_before, audit_before = ChangeLogEntry.objects.count(), AuditEntry.objects.count()
    announced.clear()
    label = PromptLabel.objects.get(entry=prompt, name="production")
    with django_capture_on_commit_callbacks(execute=True):
        label.version = PromptVersion.objects.get(entry=prompt, number=1)
        label.save()
    row = ChangeLogEntry.objects.latest("id")
    assert ChangeLogEntry.objects.count() == changes_before + 1
    assert (row.entry_kind, row.entry_key, row.label, row.list_changed) == ("prompt", "greet", "production", True)
    assert AuditEntry.objects.count() == audit_before + 1
    audit = AuditEntry.objects.latest("id")
    assert (audit.actor_name, audit.action, audit.label, audit.from_version, audit.to_version) == (
        "database", "rollback", "production", 2, 1)
    assert audit.changes  # the field-level diff between the two versions
    assert announced == [[("prompt", "greet", "production")]]
    assert rendered() == "Tell me about owls."


@pytest.mark.django_db
def test_moving_a_label_forward_outside_services_is_audited_as_a_label_move(django_capture_on_commit_callbacks):
    prompt = two_versions()
    PromptLabel.objects.create(entry=prompt, name="canary", version=PromptVersion.objects.get(entry=prompt, number=1))
    created = AuditEntry.objects.latest("id")
    assert (created.actor_name, created.action, created.label, created.from_version, created.to_version) == (
        "database", "label_move", "canary", None, 1)
    label = PromptLabel.objects.get(entry=prompt, name="canary")
    label.version = PromptVersion.objects.get(entry=prompt, number=2)
    label.save()
    moved = AuditEntry.objects.latest("id")
    assert (moved.action, moved.from_version, moved.to_version) == ("label_move", 1, 2)


@pytest.mark.django_db
def test_saving_a_label_without_moving_it_records_nothing():
    prompt = two_versions()
    counts = ChangeLogEntry.objects.count(), AuditEntry.objects.count()
    label = PromptLabel.objects.get(entry=prompt, name="production")
    label.moved_by = "someone"
    label.save()
    assert (ChangeLogEntry.objects.count(), AuditEntry.objects.count()) == counts


@pytest.mark.django_db
def test_a_service_publish_makes_exactly_one_change_row_one_announcement_and_no_database_audit(
        announced, django_capture_on_commit_callbacks):
    prompt = make_prompt("greet")
    with django_capture_on_commit_callbacks(execute=True):
        services.publish(prompt, acting_user=None, note="v1", labels=["production", "staging"])
    rows = list(ChangeLogEntry.objects.values_list("entry_kind", "entry_key", "label"))
    assert sorted(rows) == [("prompt", "greet", "production"), ("prompt", "greet", "staging")]
    assert announced == [[("prompt", "greet", "production"), ("prompt", "greet", "staging")]]
    assert not AuditEntry.objects.filter(actor_name="database").exists()
    assert list(AuditEntry.objects.order_by("id").values_list("action", flat=True)) == [
        "publish", "override", "label_move", "label_move"]


@pytest.mark.django_db
def test_two_service_calls_in_one_transaction_each_record_their_change():
    prompt = two_versions()
    before = ChangeLogEntry.objects.count()
    services.move_label(prompt, label="staging", version_number=1, acting_user=None)
    services.move_label(prompt, label="staging", version_number=2, acting_user=None)
    assert ChangeLogEntry.objects.count() == before + 2


@pytest.mark.django_db
def test_a_service_archive_makes_one_change_row_and_one_audit_row():
    resource = make_resource("docs://old")
    services.publish(resource, acting_user=None, note="v1")
    changes, audit = ChangeLogEntry.objects.count(), AuditEntry.objects.count()
    services.set_archived(resource, archived=True, acting_user=None)
    assert ChangeLogEntry.objects.count() == changes + 1
    assert list(AuditEntry.objects.filter(id__gt=0).order_by("-id").values_list("action", "actor_name")[:1]) == [
        ("archive", "command line")]
    assert AuditEntry.objects.count() == audit + 1


@pytest.mark.django_db
def test_a_service_rollout_is_recorded_by_the_receivers_alone_and_audited_by_the_service():
    """The receivers are the one recorder: the rollout's start (its row saved) and its completion
    (the label moved, the rollout row deleted) each leave change rows for the label, and the
    service's own audit rows are the only ones (no "database" rows)."""
    prompt = two_versions()
    services.move_label(prompt, label="staging", version_number=1, acting_user=None)
    before = ChangeLogEntry.objects.count()
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=10, acting_user=None)
    assert list(ChangeLogEntry.objects.filter(id__gt=before).values_list("entry_key", "label")) == [
        (prompt.name, "staging")]
    rollouts.set_rollout(prompt, label="staging", version_number=2, percent=100, acting_user=None)
    assert set(ChangeLogEntry.objects.filter(id__gt=before).values_list("entry_key", "label")) == {
        (prompt.name, "staging")}
    assert ChangeLogEntry.objects.filter(id__gt=before).count() == 3  # start; label move and rollout end
    assert not AuditEntry.objects.filter(actor_name="database").exists()


@pytest.mark.django_db
def test_archiving_by_save_is_recorded_audited_and_stops_serving(django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):  # as if the setup had committed
        resource = make_resource("docs://old")
        services.publish(resource, acting_user=None, note="v1")
    assert catalog_for("production").read_resource(ANYONE, "docs://old")
    before = ChangeLogEntry.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        resource.archived_at = timezone.now()
        resource.save()
    assert ChangeLogEntry.objects.count() == before + 1
    assert ChangeLogEntry.objects.latest("id").list_changed
    audit = AuditEntry.objects.latest("id")
    assert (audit.actor_name, audit.action, audit.entry_key) == ("database", "archive", "docs://old")
    assert [r["uri"] for r in catalog_for("production").resources(ANYONE)] == ["registry://changes/recent"]
    resource.archived_at = None
    resource.save()
    assert AuditEntry.objects.latest("id").action == "unarchive"


@pytest.mark.django_db
def test_editing_a_served_entrys_draft_by_save_records_nothing():
    resource = make_resource("docs://old")
    services.publish(resource, acting_user=None, note="v1")
    counts = ChangeLogEntry.objects.count(), AuditEntry.objects.count()
    resource.tags = "internal"
    resource.text = "draft only"
    resource.save()
    assert (ChangeLogEntry.objects.count(), AuditEntry.objects.count()) == counts


@pytest.mark.django_db
def test_starting_and_ending_a_rollout_by_save_is_recorded_and_audited():
    prompt = two_versions()
    services.move_label(prompt, label="staging", version_number=1, acting_user=None)
    before = ChangeLogEntry.objects.count()
    rollout = Rollout.objects.create(entry_kind="prompt", entry_id=prompt.pk, entry_key="greet", label="staging",
                                     candidate_version=2, percent=30, updated_by_name="shell")
    started = AuditEntry.objects.latest("id")
    assert (started.actor_name, started.action, started.label, started.from_version, started.to_version) == (
        "database", "rollout_changed", "staging", 1, 2)
    assert started.changes == [{"field": "candidate_version", "before": None, "after": 2},
                               {"field": "percent", "before": 0, "after": 30}]
    rollout.percent = 60
    rollout.save()
    assert AuditEntry.objects.latest("id").changes == [{"field": "percent", "before": 30, "after": 60}]
    rollout.delete()
    assert AuditEntry.objects.latest("id").changes == [{"field": "candidate_version", "before": 2, "after": None},
                                                       {"field": "percent", "before": 60, "after": 0}]
    assert ChangeLogEntry.objects.count() == before + 3
    assert set(ChangeLogEntry.objects.filter(id__gt=0).order_by("-id").values_list("label", flat=True)[:3]) == {
        "staging"}


@pytest.mark.django_db
def test_inserting_a_version_outside_the_services_is_audited_as_a_publish():
    prompt = two_versions()
    before = ChangeLogEntry.objects.count()
    PromptVersion.objects.create(entry=prompt, number=3, snapshot={"name": "greet"}, content_hash="0" * 64,
                                 change_note="by hand", author_name="shell")
    audit = AuditEntry.objects.latest("id")
    assert (audit.actor_name, audit.action, audit.to_version) == ("database", "publish", 3)
    assert ChangeLogEntry.objects.count() == before + 1


@pytest.mark.django_db
def test_deleting_a_label_by_hand_is_recorded_and_audited():
    prompt = two_versions()
    before = ChangeLogEntry.objects.count()
    PromptLabel.objects.filter(entry=prompt, name="production").delete()
    assert ChangeLogEntry.objects.count() == before + 1
    audit = AuditEntry.objects.latest("id")
    assert (audit.actor_name, audit.action, audit.label, audit.from_version) == ("database", "delete", "production", 2)
    assert catalog_for("production").prompts(ANYONE) == []


@pytest.mark.django_db(transaction=True)
def test_a_label_saved_in_autocommit_mode_announces_after_its_own_commit(announced):
    prompt = two_versions()
    announced.clear()
    label = PromptLabel.objects.get(entry=prompt, name="production")
    label.version = PromptVersion.objects.get(entry=prompt, number=1)
    label.save()
    assert announced == [[("prompt", "greet", "production")]]
    assert AuditEntry.objects.filter(actor_name="database", action="rollback").count() == 1


@pytest.mark.django_db
def test_a_rolled_back_transaction_records_and_announces_nothing(announced, django_capture_on_commit_callbacks):
    from django.db import transaction

    prompt = two_versions()
    before = ChangeLogEntry.objects.count(), AuditEntry.objects.count()
    with (django_capture_on_commit_callbacks(execute=True) as callbacks, pytest.raises(RuntimeError),
          transaction.atomic()):
        label = PromptLabel.objects.get(entry=prompt, name="production")
        label.version = PromptVersion.objects.get(entry=prompt, number=1)
        label.save()
        raise RuntimeError("abort")
    assert callbacks == [] and announced == []
    assert (ChangeLogEntry.objects.count(), AuditEntry.objects.count()) == before


@pytest.mark.django_db
def test_fixture_loading_is_ignored_by_the_receivers(tmp_path):
    prompt = two_versions()
    rows = json.loads(serializers.serialize("json", [PromptLabel.objects.get(entry=prompt, name="production")]))
    rows[0]["fields"]["version"] = PromptVersion.objects.get(entry=prompt, number=1).pk
    fixture = tmp_path / "labels.json"
    fixture.write_text(json.dumps(rows))
    counts = ChangeLogEntry.objects.count(), AuditEntry.objects.count()
    call_command("loaddata", str(fixture), verbosity=0)
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 1
    assert (ChangeLogEntry.objects.count(), AuditEntry.objects.count()) == counts


@pytest.mark.django_db
@pytest.mark.parametrize("queryset, fields", [
    (lambda: PromptLabel.objects.all(), {"version": None}),
    (lambda: ResourceLabel.objects.all(), {"version_id": 1}),
    (lambda: PromptLabel.objects.all(), {"name": "canary"}),
    (lambda: Prompt.objects.all(), {"archived_at": None}),
    (lambda: Resource.objects.all(), {"archived_at": timezone.now()}),
    (lambda: Rollout.objects.all(), {"percent": 50}),
    (lambda: McpClient.objects.all(), {"label": "staging"}),
    (lambda: McpClient.objects.all(), {"active": False}),
])
def test_bulk_updates_of_served_fields_are_refused_with_a_pointer_to_save(queryset, fields):
    two_versions()
    with pytest.raises(BulkUpdateRefused, match=r"\.save\(\)"):
        queryset().update(**fields)


@pytest.mark.django_db
def test_bulk_updates_of_other_fields_are_allowed():
    prompt = two_versions()
    client, _token = clients.create_client(name="desk")
    assert McpClient.objects.filter(pk=client.pk).update(last_seen_at=timezone.now()) == 1
    assert PromptLabel.objects.filter(entry=prompt).update(moved_by="someone") == 1
    assert Prompt.objects.filter(pk=prompt.pk).update(description="draft only") == 1


@pytest.mark.django_db
def test_rescoping_a_client_by_save_drops_cached_tokens_on_commit(django_capture_on_commit_callbacks):
    client, token = clients.create_client(name="desk")
    assert clients.load_viewer(token).label == "production"
    assert clients.cached_viewer(token)[0]
    with django_capture_on_commit_callbacks(execute=True):
        client.label = "staging"
        client.save()
    assert clients.cached_viewer(token) == (False, None)
    assert clients.load_viewer(token).label == "staging"


@pytest.mark.django_db
def test_saving_a_client_without_a_scope_change_keeps_cached_tokens(django_capture_on_commit_callbacks):
    client, token = clients.create_client(name="desk")
    clients.load_viewer(token)
    with django_capture_on_commit_callbacks(execute=True):
        client.description = "help desk"
        client.save()
    assert clients.cached_viewer(token)[0]


@pytest.mark.django_db
def test_labels_created_in_bulk_are_recorded_audited_and_served(django_capture_on_commit_callbacks):
    first, second = make_prompt("first"), make_prompt("second")
    versions = []
    for prompt in (first, second):
        snap = {"name": prompt.name, "messages": []}
        versions.append(PromptVersion.objects.create(entry=prompt, number=1, snapshot=snap, content_hash="0" * 64,
                                                     change_note="by hand", author_name="shell"))
    before = ChangeLogEntry.objects.count()
    PromptLabel.objects.bulk_create([PromptLabel(entry=v.entry, version=v, name="production") for v in versions])
    assert ChangeLogEntry.objects.count() == before + 1
    change = ChangeLogEntry.objects.latest("id")
    assert (change.entry_kind, change.entry_key, change.label, change.list_changed) == (
        "prompt", "*", "production", True)
    audit = AuditEntry.objects.latest("id")
    assert (audit.actor_name, audit.action, audit.label, audit.entry_key) == (
        "database", "label_move", "production", "* (2 entries)")


@pytest.mark.django_db
def test_a_rollout_created_in_bulk_is_recorded_and_audited():
    prompt = two_versions()
    services.move_label(prompt, label="staging", version_number=1, acting_user=None)
    before = ChangeLogEntry.objects.count()
    Rollout.objects.bulk_create([Rollout(entry_kind="prompt", entry_id=prompt.pk, entry_key="greet", label="staging",
                                         candidate_version=2, percent=20, updated_by_name="shell")])
    assert ChangeLogEntry.objects.count() == before + 1
    audit = AuditEntry.objects.latest("id")
    assert (audit.actor_name, audit.action, audit.to_version) == ("database", "rollout_changed", 2)


@pytest.mark.django_db
def test_renaming_a_label_by_save_records_both_names():
    prompt = two_versions()
    services.move_label(prompt, label="staging", version_number=1, acting_user=None)
    before = ChangeLogEntry.objects.count()
    label = PromptLabel.objects.get(entry=prompt, name="staging")
    label.name = "canary"
    label.save()
    assert set(ChangeLogEntry.objects.filter(id__gt=0).order_by("-id").values_list("label", flat=True)[:2]) == {
        "staging", "canary"}
    assert ChangeLogEntry.objects.count() == before + 2
    assert list(AuditEntry.objects.order_by("-id").values_list("action", "label")[:2]) == [
        ("label_move", "canary"), ("delete", "staging")]
