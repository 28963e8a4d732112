import pytest

from registry.authoring import drafts
from registry.authoring.snapshots import snapshot_of
from registry.errors import (
    ApprovalRequired,
    InvalidEntry,
    NothingToPublish,
    PublishPermissionDenied,
    RegistryError,
)
from registry.models import AuditEntry, ChangeLogEntry, PromptLabel, PromptMessage, PromptVersion
from registry.release import services
from tests.factories import make_prompt, make_resource, release


def production_of(prompt):
    return PromptLabel.objects.get(entry=prompt, name="production").version.number


def staging_of(prompt):
    return PromptLabel.objects.get(entry=prompt, name="staging").version.number


STAGING = ["staging"]  # an unprotected label: publishers move it without a review


@pytest.mark.django_db
def test_publish_freezes_the_draft_as_version_one_and_moves_an_unprotected_label(publisher):
    prompt = make_prompt("greet")
    version = services.publish(prompt, acting_user=publisher, note="First cut", labels=STAGING)
    assert (version.number, version.parent, version.author, version.change_note) == (1, None, publisher, "First cut")
    assert version.snapshot["messages"][0]["content"]["text"] == "Tell me about {{ topic }}."
    assert len(version.content_hash) == 64
    assert staging_of(prompt) == 1
    assert not PromptLabel.objects.get(entry=prompt, name="staging").protected
    publish_row = AuditEntry.objects.get(action="publish")
    assert (publish_row.actor, publish_row.to_version, publish_row.note) == (publisher, 1, "First cut")
    assert {"field": "name", "before": None, "after": "greet"} in publish_row.changes
    move = AuditEntry.objects.get(action="label_move")
    assert (move.label, move.from_version, move.to_version) == ("staging", None, 1)


@pytest.mark.django_db
def test_publishing_to_production_without_approval_is_refused_and_saves_nothing(publisher):
    prompt = make_prompt("greet")
    with pytest.raises(ApprovalRequired):
        services.publish(prompt, acting_user=publisher, note="First cut")
    assert not PromptVersion.objects.exists() and not PromptLabel.objects.exists()
    assert list(AuditEntry.objects.values_list("action", flat=True)) == ["refused"]  # the attempt, nothing done
    assert not ChangeLogEntry.objects.exists()


@pytest.mark.django_db
def test_the_command_line_publishes_to_production_as_an_audited_operator_override():
    prompt = make_prompt("greet")
    services.publish(prompt, acting_user=None, note="bootstrap")
    assert production_of(prompt) == 1
    assert PromptLabel.objects.get(entry=prompt, name="production").protected
    override = AuditEntry.objects.get(action="override")
    assert (override.actor, override.actor_name, override.label, override.note) == (
        None, "command line", "production", "command line (operator)")


@pytest.mark.django_db
def test_second_publish_records_parent_and_message_diff(publisher):
    prompt = make_prompt("greet")
    first = services.publish(prompt, acting_user=publisher, note="v1", labels=STAGING)
    PromptMessage.objects.filter(prompt=prompt).update(text="Explain {{ topic }} simply.")
    second = services.publish(prompt, acting_user=publisher, note="simpler", labels=STAGING)
    assert (second.number, second.parent) == (2, first)
    diff = AuditEntry.objects.filter(action="publish", to_version=2).get().changes
    assert diff == [{"field": "messages[1].content.text", "before": "Tell me about {{ topic }}.",
                     "after": "Explain {{ topic }} simply."}]
    assert staging_of(prompt) == 2


@pytest.mark.django_db
def test_publishing_an_unchanged_draft_is_refused(publisher):
    prompt = make_prompt()
    services.publish(prompt, acting_user=publisher, note="v1", labels=STAGING)
    with pytest.raises(NothingToPublish):
        services.publish(prompt, acting_user=publisher, note="again", labels=STAGING)
    assert PromptVersion.objects.count() == 1


@pytest.mark.django_db
def test_publish_requires_a_change_note(publisher):
    with pytest.raises(InvalidEntry):
        services.publish(make_prompt(), acting_user=publisher, note="   ")
    assert PromptVersion.objects.count() == 0


@pytest.mark.django_db
def test_editor_cannot_publish_move_or_roll_back(editor, publisher):
    prompt = make_prompt()
    with pytest.raises(PublishPermissionDenied):
        services.publish(prompt, acting_user=editor, note="sneaky", labels=STAGING)
    services.publish(prompt, acting_user=publisher, note="v1", labels=())
    with pytest.raises(PublishPermissionDenied):
        services.move_label(prompt, label="staging", version_number=1, acting_user=editor)
    with pytest.raises(PublishPermissionDenied):
        services.rollback(prompt, acting_user=editor, note="no", label="staging")
    assert PromptVersion.objects.count() == 1
    assert set(AuditEntry.objects.filter(actor=editor).values_list("action", flat=True)) == {"refused"}
    assert AuditEntry.objects.filter(actor=editor).count() == 3  # each attempt once


@pytest.mark.django_db
def test_broken_draft_cannot_be_published(publisher):
    prompt = make_prompt(messages=[{"role": "user", "kind": "text", "text": "Hi {{ nobody }}"}])
    with pytest.raises(InvalidEntry) as error:
        services.publish(prompt, acting_user=publisher, note="x")
    assert "nobody" in str(error.value)
    assert PromptVersion.objects.count() == 0 and AuditEntry.objects.count() == 0


@pytest.mark.django_db
def test_rollback_points_the_label_at_the_previous_version_and_is_audited(publisher):
    prompt = make_prompt()
    services.publish(prompt, acting_user=publisher, note="v1", labels=STAGING)
    PromptMessage.objects.filter(prompt=prompt).update(text="New {{ topic }}")
    services.publish(prompt, acting_user=publisher, note="v2", labels=STAGING)
    services.rollback(prompt, acting_user=publisher, note="v2 confuses the model", label="staging")
    assert staging_of(prompt) == 1
    row = AuditEntry.objects.get(action="rollback")
    assert (row.label, row.from_version, row.to_version, row.note) == ("staging", 2, 1, "v2 confuses the model")
    assert row.changes[0]["field"] == "messages[1].content.text"


@pytest.mark.django_db
def test_rolling_back_production_needs_approval_or_an_audited_override(publisher, release_manager):
    """To a version production never served (v1 went to staging only): not an incident rollback."""
    prompt = make_prompt()
    release(prompt, note="v1", labels=("staging",))
    PromptMessage.objects.filter(prompt=prompt).update(text="New {{ topic }}")
    release(prompt, note="v2")
    with pytest.raises(ApprovalRequired):
        services.rollback(prompt, acting_user=publisher, note="v2 confuses the model")
    with pytest.raises(PublishPermissionDenied):  # a reason alone is not enough: the permission is needed
        services.rollback(prompt, acting_user=publisher, note="v2 confuses the model", override_reason="urgent")
    assert production_of(prompt) == 2
    services.rollback(prompt, acting_user=release_manager, note="v2 confuses the model",
                      override_reason="incident 42: answers are wrong")
    assert production_of(prompt) == 1
    override = AuditEntry.objects.get(action="override", actor=release_manager)
    assert (override.label, override.from_version, override.to_version, override.note) == (
        "production", 2, 1, "incident 42: answers are wrong")
    assert AuditEntry.objects.filter(action="rollback", actor=release_manager, to_version=1).exists()


@pytest.mark.django_db
def test_rollback_of_the_first_version_is_refused(publisher):
    prompt = make_prompt()
    services.publish(prompt, acting_user=publisher, note="v1", labels=STAGING)
    with pytest.raises(RegistryError):
        services.rollback(prompt, acting_user=publisher, note="nowhere to go", label="staging")


@pytest.mark.django_db
def test_move_label_creates_staging_and_records_a_change(publisher):
    prompt = make_prompt()
    services.publish(prompt, acting_user=publisher, note="v1", labels=())
    before = ChangeLogEntry.objects.count()
    services.move_label(prompt, label="staging", version_number=1, acting_user=publisher, note="try it")
    assert PromptLabel.objects.get(entry=prompt, name="staging").version.number == 1
    change = ChangeLogEntry.objects.last()
    assert ChangeLogEntry.objects.count() == before + 1
    assert (change.entry_kind, change.entry_key, change.label) == ("prompt", prompt.name, "staging")


@pytest.mark.django_db
def test_archive_is_audited_and_announced(publisher):
    resource = make_resource("docs://old")
    release(resource, note="v1")
    services.set_archived(resource, archived=True, acting_user=publisher, note="superseded")
    resource.refresh_from_db()
    assert resource.archived_at is not None
    assert AuditEntry.objects.filter(action="archive", entry_key="docs://old", note="superseded").exists()
    assert ChangeLogEntry.objects.filter(entry_key="docs://old", list_changed=True).exists()


@pytest.mark.django_db
def test_draft_edits_are_audited_with_a_field_diff_and_announce_nothing(editor):
    prompt = make_prompt()
    before = snapshot_of(prompt)
    prompt.description = "Sharper"
    prompt.save()
    row = drafts.record_draft_change(prompt, before=before, acting_user=editor)
    assert row.action == "edit" and row.actor == editor
    assert row.changes == [{"field": "description", "before": "A prompt for tests", "after": "Sharper"}]
    assert ChangeLogEntry.objects.count() == 0
    assert drafts.record_draft_change(prompt, before=snapshot_of(prompt), acting_user=editor) is None


@pytest.mark.django_db(transaction=True)
def test_changes_are_announced_once_per_recording_scope_after_commit(publisher):
    from registry.changes import recording
    from registry.signals import registry_changed

    batches = []

    def receiver(sender, batch, **kwargs):
        batches.append(batch)

    registry_changed.connect(receiver, dispatch_uid="test-receiver")
    try:
        prompts = [make_prompt() for _ in range(5)]
        with recording():
            for prompt in prompts:
                services.publish(prompt, acting_user=publisher, note="bulk", labels=STAGING)
            assert batches == []
        assert len(batches) == 1
        assert {c.key for c in batches[0].changes} == {p.name for p in prompts}
    finally:
        registry_changed.disconnect(dispatch_uid="test-receiver")


@pytest.mark.django_db(transaction=True)
def test_services_in_someone_elses_transaction_are_announced_after_it_commits_and_not_after_a_rollback(publisher):
    """A plain transaction.atomic() around several services: each service's changes are announced
    once it commits (no batching across them is promised there: registry.changes.recording is
    the way to ask for one announcement), and nothing when it rolls back."""
    from django.db import transaction

    from registry.signals import registry_changed

    batches = []
    registry_changed.connect(lambda sender, batch, **kw: batches.append(batch), dispatch_uid="test-plain", weak=False)
    try:
        prompts = [make_prompt() for _ in range(3)]
        with transaction.atomic():
            for prompt in prompts:
                services.publish(prompt, acting_user=publisher, note="one by one", labels=STAGING)
            assert batches == []
        assert sorted(c.key for b in batches for c in b.changes) == sorted(p.name for p in prompts)
        batches.clear()
        with pytest.raises(RuntimeError), transaction.atomic():
            services.publish(make_prompt(), acting_user=publisher, note="undone", labels=STAGING)
            raise RuntimeError("rolled back")
        assert batches == []
    finally:
        registry_changed.disconnect(dispatch_uid="test-plain")


@pytest.mark.django_db(transaction=True)
def test_an_inner_rollback_caught_inside_a_service_scope_loses_no_later_change(publisher):
    """The scope's batch is registered at the scope's own level, so a savepoint rolled back inside
    it (its first change included) cannot take the announcement of later changes with it."""
    from django.db import transaction

    from registry.changes import recording
    from registry.signals import registry_changed

    batches = []
    registry_changed.connect(lambda sender, batch, **kw: batches.append(batch), dispatch_uid="test-inner", weak=False)
    try:
        first, second = make_prompt(), make_prompt()
        with recording():
            try:
                with transaction.atomic():
                    services.publish(first, acting_user=publisher, note="undone", labels=STAGING)
                    raise RuntimeError("savepoint rolled back")
            except RuntimeError:
                pass
            services.publish(second, acting_user=publisher, note="kept", labels=STAGING)
        assert second.name in {c.key for b in batches for c in b.changes}
    finally:
        registry_changed.disconnect(dispatch_uid="test-inner")


@pytest.mark.django_db(transaction=True)
def test_rolled_back_transaction_announces_nothing(publisher):
    from django.db import transaction

    from registry.signals import registry_changed

    batches = []
    registry_changed.connect(lambda sender, batch, **kw: batches.append(batch), dispatch_uid="test-rollback",
                             weak=False)
    try:
        prompt = make_prompt()
        with pytest.raises(RuntimeError), transaction.atomic():
            services.publish(prompt, acting_user=publisher, note="doomed", labels=STAGING)
            raise RuntimeError("abort")
        assert batches == []
        assert not ChangeLogEntry.objects.exists()
    finally:
        registry_changed.disconnect(dispatch_uid="test-rollback")


@pytest.mark.django_db
def test_publishes_in_one_recording_scope_schedule_exactly_one_announcement_on_commit(
        publisher, django_capture_on_commit_callbacks):
    from registry.changes import ChangeBatch, recording
    from registry.signals import registry_changed

    heard = []
    registry_changed.connect(lambda sender, batch, **kw: heard.append(batch), dispatch_uid="capture", weak=False)
    try:
        prompts = [make_prompt() for _ in range(3)]
        with django_capture_on_commit_callbacks(execute=False) as callbacks, recording():
            for prompt in prompts:
                services.publish(prompt, acting_user=publisher, note="v1", labels=("staging",))
        batches = [c for c in callbacks if isinstance(c, ChangeBatch)]
        assert len(batches) == 1 and len(batches[0].changes) == 3
        assert heard == []  # nothing announced before the commit
        batches[0]()
        assert [len(b.changes) for b in heard] == [3]
    finally:
        registry_changed.disconnect(dispatch_uid="capture")


@pytest.mark.django_db(transaction=True)  # commits as in production (no test-wide transaction)
def test_one_publish_of_a_resource_to_production_takes_a_fixed_small_number_of_queries():
    """Pins the single publish path's queries (issue 10): the lock, the newest version, the
    content check, version + audit rows, the label and its move, the label receiver's one read
    of what the label served before (it records every move, the service's included), rollouts,
    change log, reviews, and one read of the active webhooks for the transaction's three audit rows."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    resource = make_resource("docs://pinned")
    release(resource)
    resource.text = "second text"
    resource.save()
    with CaptureQueriesContext(connection) as captured:
        services.publish(resource, acting_user=None, note="second")
    sql = [q["sql"] for q in captured.captured_queries
           if not q["sql"].startswith(("SAVEPOINT", "RELEASE", "BEGIN", "COMMIT"))]
    assert sum("webhooks_webhook" in q for q in sql) == 1, "\n".join(sql)
    assert not any("registry_changelogentry" in q and q.startswith("SELECT") for q in sql)
    assert len(sql) == 15, "\n".join(sql)  # 20 before: 3 label re-reads, a change-log check, 2 webhook reads
    actions = AuditEntry.objects.filter(entry_key="docs://pinned").order_by("id").values_list("action", flat=True)
    assert list(actions) == ["publish", "override", "label_move", "publish", "override", "label_move"]
    assert ChangeLogEntry.objects.filter(entry_key="docs://pinned").count() == 2
