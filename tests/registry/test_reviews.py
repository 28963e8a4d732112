"""Four eyes: request, approve, reject, withdraw; protected labels through every path."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from registry.errors import (
    ApprovalRequired,
    InvalidEntry,
    NotAnOlderVersion,
    PublishPermissionDenied,
    ReviewClosed,
    SelfApproval,
    StaleReview,
)
from registry.models import (
    AuditEntry,
    ChangeLogEntry,
    PromptLabel,
    PromptMessage,
    PromptVersion,
    ReviewRequest,
    ReviewStatus,
)
from registry.portable.importer import ImportFailed, import_documents
from registry.release import reviews, services
from registry.signals import audit_recorded
from tests.factories import make_prompt, make_resource, make_user, release

pytestmark = pytest.mark.django_db


def production_of(entry) -> int | None:
    label = entry.labels.filter(name="production").select_related("version").first()
    return label.version.number if label else None


def edited(prompt, text: str = "New take on {{ topic }}."):
    PromptMessage.objects.filter(prompt=prompt).update(text=text)
    return prompt


def actions(entry) -> list[str]:
    return list(AuditEntry.objects.filter(entry_id=entry.pk, entry_kind=entry.kind).order_by("id")
                .values_list("action", flat=True))


# ------------------------------------------------------------------------------------ request


def test_an_editor_requests_publication_of_the_draft_with_a_note(editor):
    prompt = make_prompt()
    review = reviews.request_publication(prompt, acting_user=editor, note="Ready for customers")
    assert (review.status, review.label, review.version_number, review.base_version) == (
        "pending", "production", None, None)
    assert review.content_hash and review.snapshot["name"] == prompt.name
    assert review.requested_by == editor
    row = AuditEntry.objects.get(action="review_requested")
    assert (row.actor, row.label) == (editor, "production") and "Ready for customers" in row.note
    assert not PromptVersion.objects.exists() and not ChangeLogEntry.objects.exists()


def test_a_request_needs_a_note(editor):
    with pytest.raises(InvalidEntry):
        reviews.request_publication(make_prompt(), acting_user=editor, note="  ")
    assert not ReviewRequest.objects.exists()


def test_an_auditor_cannot_request_publication(auditor):
    with pytest.raises(PublishPermissionDenied):
        reviews.request_publication(make_prompt(), acting_user=auditor, note="please")


def test_a_draft_identical_to_the_newest_version_becomes_a_request_for_that_version(editor):
    prompt = make_prompt()
    release(prompt, labels=["staging"])
    review = reviews.request_publication(prompt, acting_user=editor, note="promote staging")
    assert (review.version_number, review.content_hash) == (1, "")


# ------------------------------------------------------------------------------------ approve


def test_an_editor_cannot_approve_their_own_request(editor):
    review = reviews.request_publication(make_prompt(), acting_user=editor, note="mine")
    with pytest.raises(PublishPermissionDenied):  # editors may not publish at all
        reviews.approve(review, acting_user=editor)


def test_a_publisher_cannot_approve_their_own_request(publisher):
    prompt = make_prompt()
    review = reviews.request_publication(prompt, acting_user=publisher, note="mine")
    with pytest.raises(SelfApproval):
        reviews.approve(review, acting_user=publisher)
    assert production_of(prompt) is None and ReviewRequest.objects.get().status == "pending"


def test_a_publisher_approving_someone_elses_request_publishes_and_moves_production(editor, publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    edited(prompt)
    review = reviews.request_publication(prompt, acting_user=editor, note="Friendlier")
    with django_capture_changes() as announced:
        reviews.approve(review, acting_user=publisher, comment="Looks good")
    assert production_of(prompt) == 2
    version = PromptVersion.objects.get(entry=prompt, number=2)
    assert version.author == editor  # the requester wrote it
    assert "approved by" in version.change_note and publisher.username in version.change_note
    review.refresh_from_db()
    assert (review.status, review.decided_by, review.decision_comment, review.result_version) == (
        "approved", publisher, "Looks good", 2)
    assert actions(prompt)[-3:] == ["review_approved", "publish", "label_move"]
    assert AuditEntry.objects.filter(actor=publisher,
                                     action__in=["review_approved", "publish", "label_move"]).count() == 3
    assert not AuditEntry.objects.filter(action="override", actor=publisher).exists()
    assert ("prompt", prompt.name, "production") in announced


def test_approving_a_version_request_moves_the_label_back(editor, publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt), note="v2")
    review = reviews.request_publication(prompt, acting_user=editor, note="v2 misbehaves", version_number=1)
    reviews.approve(review, acting_user=publisher)
    assert production_of(prompt) == 1
    assert actions(prompt)[-2:] == ["review_approved", "rollback"]


def test_a_stale_request_is_refused_when_the_draft_changed(editor, publisher):
    prompt = make_prompt()
    review = reviews.request_publication(prompt, acting_user=editor, note="v1")
    edited(prompt, "Changed after the request {{ topic }}.")
    with pytest.raises(StaleReview, match=r"draft .* changed"):
        reviews.approve(review, acting_user=publisher)
    assert not PromptVersion.objects.exists()
    assert ReviewRequest.objects.get().status == "pending"


def test_a_request_goes_stale_when_the_tags_change_before_approval(editor, publisher):
    """Tags decide who is served the version: a reviewer approves exactly the tags that were asked for."""
    prompt = make_prompt(tags="billing")
    review = reviews.request_publication(prompt, acting_user=editor, note="v1 for billing")
    prompt.tags = "billing, everyone"
    prompt.save()
    with pytest.raises(StaleReview, match=r"draft .* changed"):
        reviews.approve(review, acting_user=publisher)
    assert not PromptVersion.objects.exists()


def test_two_approvals_for_one_label_the_second_is_refused(editor, publisher, second_publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), labels=[], note="v2")
    release(edited(prompt, "Three {{ topic }}"), labels=[], note="v3")
    ask_v2 = reviews.request_publication(prompt, acting_user=editor, note="v2 please", version_number=2)
    ask_v3 = reviews.request_publication(prompt, acting_user=editor, note="v3 please", version_number=3)
    reviews.approve(ask_v2, acting_user=publisher)
    with pytest.raises(ReviewClosed, match="already superseded"):
        reviews.approve(ask_v3, acting_user=second_publisher)
    assert production_of(prompt) == 2


def test_a_request_made_stale_by_a_competing_approval_is_closed_as_superseded(editor, publisher):
    """Left pending it could never be approved (its base moved) and would wait forever."""
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), labels=[], note="v2")
    release(edited(prompt, "Three {{ topic }}"), labels=[], note="v3")
    ask_v2 = reviews.request_publication(prompt, acting_user=editor, note="v2 please", version_number=2)
    ask_v3 = reviews.request_publication(prompt, acting_user=editor, note="v3 please", version_number=3)
    staging = reviews.request_publication(prompt, acting_user=editor, note="v3 on staging", label="staging",
                                          version_number=3)
    reviews.approve(ask_v2, acting_user=publisher)

    ask_v3.refresh_from_db()
    assert ask_v3.status == ReviewStatus.SUPERSEDED
    assert "'production' moved to v2" in ask_v3.decision_comment and ask_v3.decided_at is not None
    told = AuditEntry.objects.get(action="review_superseded")
    assert (told.label, told.from_version, told.to_version) == ("production", 1, 2)
    assert f"Review #{ask_v3.pk} by {editor.username}" in told.note
    assert ReviewRequest.objects.get(pk=ask_v2.pk).status == ReviewStatus.APPROVED
    assert ReviewRequest.objects.get(pk=staging.pk).status == ReviewStatus.PENDING  # another label: untouched


def test_an_approved_request_cannot_be_approved_again(editor, publisher, second_publisher):
    prompt = make_prompt()
    review = reviews.request_publication(prompt, acting_user=editor, note="v1")
    reviews.approve(review, acting_user=publisher)
    with pytest.raises(ReviewClosed):
        reviews.approve(review, acting_user=second_publisher)
    assert PromptVersion.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_concurrent_approvals_for_one_label_leave_exactly_one_approved_state():
    """Two publishers approve two requests at the same moment, in two threads and two connections."""
    if connection.vendor == "sqlite":
        pytest.skip("needs row locks (PostgreSQL); SQLite serialises writers, covered by the sequential test")
    editor, first, second = make_user("Editors"), make_user("Publishers"), make_user("Publishers")
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), labels=[], note="v2")
    release(edited(prompt, "Three {{ topic }}"), labels=[], note="v3")
    asks = [reviews.request_publication(prompt, acting_user=editor, note=f"v{n}", version_number=n) for n in (2, 3)]
    outcomes: list[str] = []
    barrier = threading.Barrier(2)

    def approve(review, user):
        from django.db import connection as thread_connection
        try:
            barrier.wait()
            reviews.approve(review, acting_user=user)
            outcomes.append("approved")
        except (StaleReview, ReviewClosed):  # the loser finds the label moved (or its request superseded)
            outcomes.append("stale")
        finally:
            thread_connection.close()

    threads = [threading.Thread(target=approve, args=(r, u)) for r, u in zip(asks, (first, second), strict=True)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(outcomes) == ["approved", "stale"]
    approved = ReviewRequest.objects.get(status="approved")
    assert production_of(prompt) == approved.version_number


# ------------------------------------------------------------------------------ reject, withdraw


def test_reject_needs_a_comment_and_changes_nothing(editor, publisher):
    prompt = make_prompt()
    review = reviews.request_publication(prompt, acting_user=editor, note="please")
    with pytest.raises(InvalidEntry):
        reviews.reject(review, acting_user=publisher, comment=" ")
    reviews.reject(review, acting_user=publisher, comment="Wrong tone")
    review.refresh_from_db()
    assert (review.status, review.decided_by, review.decision_comment) == ("rejected", publisher, "Wrong tone")
    assert actions(prompt)[-1] == "review_rejected" and not PromptVersion.objects.exists()


def test_only_the_requester_withdraws(editor, publisher):
    review = reviews.request_publication(make_prompt(), acting_user=editor, note="please")
    with pytest.raises(PublishPermissionDenied):
        reviews.withdraw(review, acting_user=publisher)
    reviews.withdraw(review, acting_user=editor)
    assert ReviewRequest.objects.get().status == "withdrawn"
    with pytest.raises(ReviewClosed):
        reviews.approve(review, acting_user=publisher)


# -------------------------------------------------------------------- protection on every path


def test_a_superusers_plain_call_cannot_move_production_but_the_override_can(superuser):
    prompt = make_prompt()
    with pytest.raises(ApprovalRequired):
        services.publish(prompt, acting_user=superuser, note="just ship it")
    assert not PromptVersion.objects.exists()
    services.publish(prompt, acting_user=superuser, note="ship it", override_reason="launch day, reviewer away")
    assert production_of(prompt) == 1
    override = AuditEntry.objects.get(action="override")
    assert (override.actor, override.label, override.to_version, override.note) == (
        superuser, "production", 1, "launch day, reviewer away")


def test_a_publisher_cannot_use_the_override_without_the_permission(publisher):
    with pytest.raises(PublishPermissionDenied, match="override"):
        services.publish(make_prompt(), acting_user=publisher, note="go", override_reason="trust me")
    assert not PromptVersion.objects.exists()
    assert list(AuditEntry.objects.values_list("action", flat=True)) == ["refused"]  # no override row


def test_unprotected_labels_move_without_review_and_protection_follows_the_setting(publisher, settings):
    prompt = make_prompt()
    services.publish(prompt, acting_user=publisher, note="v1", labels=["staging", "canary"])
    assert not AuditEntry.objects.filter(action="override").exists()
    settings.REGISTRY = {**settings.REGISTRY, "PROTECTED_LABELS": ["production", "eu-prod"]}
    with pytest.raises(ApprovalRequired):
        services.move_label(prompt, label="eu-prod", version_number=1, acting_user=publisher)


def test_a_protected_flag_on_an_existing_label_row_is_honoured(publisher):
    prompt = make_prompt()
    services.publish(prompt, acting_user=publisher, note="v1", labels=["staging"])
    PromptLabel.objects.filter(entry=prompt, name="staging").update(protected=True)
    services.publish(edited(prompt), acting_user=publisher, note="v2", labels=[])
    with pytest.raises(ApprovalRequired):
        services.move_label(prompt, label="staging", version_number=2, acting_user=publisher)


def test_an_import_by_a_user_cannot_move_production_but_the_command_line_can(superuser, tmp_path):
    path = tmp_path / "prompts.yaml"
    path.write_text("prompts:\n  - name: greet\n    messages:\n      - {role: user, text: Hello}\n")
    with pytest.raises(ImportFailed, match="protected label"):
        import_documents(path, publish=True, note="from CI", acting_user=superuser)
    assert not PromptVersion.objects.exists()
    import_documents(path, publish=True, note="from CI", acting_user=superuser, override_reason="bootstrap")
    assert PromptVersion.objects.count() == 1
    resource_path = tmp_path / "docs.yaml"
    resource_path.write_text("resources:\n  - {uri: 'docs://a', name: a, text: A}\n")
    import_documents(resource_path, publish=True, note="operator")  # acting_user=None: the command line
    override = AuditEntry.objects.get(action="override", entry_key="docs://a")
    assert (override.actor_name, override.note) == ("registry_import", "command line (operator)")


def test_the_ci_flow_imports_drafts_then_requests_and_gets_approval(editor, publisher, tmp_path):
    path = tmp_path / "prompts.yaml"
    path.write_text("prompts:\n  - name: greet\n    messages:\n      - {role: user, text: Hello}\n")
    import_documents(path, acting_user=editor)  # drafts only: no review needed
    from registry.models import Prompt

    prompt = Prompt.objects.get(name="greet")
    review = reviews.request_publication(prompt, acting_user=editor, note="from CI run 12")
    reviews.approve(review, acting_user=publisher)
    assert production_of(prompt) == 1


def test_resources_are_protected_like_prompts(editor, publisher):
    resource = make_resource("docs://guide")
    with pytest.raises(ApprovalRequired):
        services.publish(resource, acting_user=publisher, note="v1")
    review = reviews.request_publication(resource, acting_user=editor, note="v1")
    reviews.approve(review, acting_user=publisher)
    assert production_of(resource) == 1


def test_every_audit_row_is_announced_on_the_audit_recorded_signal_inside_the_transaction(editor, publisher):
    seen = []

    def receiver(sender, entry, **kwargs):
        seen.append((entry.action, connection.in_atomic_block))

    audit_recorded.connect(receiver, dispatch_uid="test-audit-recorded")
    try:
        review = reviews.request_publication(make_prompt(), acting_user=editor, note="go")
        reviews.approve(review, acting_user=publisher)
    finally:
        audit_recorded.disconnect(dispatch_uid="test-audit-recorded")
    assert [a for a, _ in seen] == ["review_requested", "review_approved", "publish", "label_move"]
    assert all(in_atomic for _, in_atomic in seen)


# ------------------------------------------------------------------------------------ helpers


class django_capture_changes:
    """Collect (kind, key, label) of change-log rows written inside the block."""

    def __enter__(self):
        self.start = ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
        self.rows: set[tuple[str, str, str]] = set()
        return self.rows

    def __exit__(self, *exc):
        self.rows.update(ChangeLogEntry.objects.filter(id__gt=self.start)
                         .values_list("entry_kind", "entry_key", "label"))
        return False


def test_a_draft_published_meanwhile_is_served_as_that_version_on_approval(editor, publisher, second_publisher):
    prompt = make_prompt()
    review = reviews.request_publication(prompt, acting_user=editor, note="v1 please")
    services.publish(prompt, acting_user=publisher, note="v1 for staging", labels=["staging"])
    reviews.approve(review, acting_user=second_publisher)
    assert production_of(prompt) == 1 and PromptVersion.objects.count() == 1


def test_a_rollout_request_needs_a_label_to_roll_out_from(editor):
    from registry.errors import InvalidRollout

    with pytest.raises(InvalidRollout):
        reviews.request_publication(make_prompt(), acting_user=editor, note="10% please", percent=10)
    with pytest.raises(InvalidRollout):
        reviews.request_publication(make_prompt(), acting_user=editor, note="all", percent=100)


def test_the_review_page_says_a_request_was_superseded_when_the_label_moved(client, editor, publisher,
                                                                          release_manager):
    from django.urls import reverse

    prompt = make_prompt()
    release(prompt, note="v1")
    review = reviews.request_publication(edited(prompt), acting_user=editor, note="v2 please")
    services.publish(prompt, acting_user=release_manager, note="hotfix", override_reason="incident")
    client.force_login(editor)
    page = client.get(reverse("admin:registry_reviewrequest_change", args=[review.pk]))
    assert "Superseded" in page.text and "moved to v2" in page.text


def test_changing_label_protection_needs_the_override_permission_and_is_audited(publisher, release_manager):
    prompt = make_prompt()
    release(prompt, labels=["production", "staging"])
    with pytest.raises(PublishPermissionDenied):
        services.set_label_protected(prompt, label="staging", protected=True, acting_user=publisher, reason="x")
    services.set_label_protected(prompt, label="staging", protected=True, acting_user=release_manager,
                                 reason="EU customers read staging")
    assert prompt.labels.get(name="staging").protected
    row = AuditEntry.objects.filter(action="override", label="staging").get()
    assert row.changes == [{"field": "protected", "before": False, "after": True}]
    release(edited(prompt), labels=[], note="v2")
    with pytest.raises(ApprovalRequired):
        services.move_label(prompt, label="staging", version_number=2, acting_user=publisher)


# ------------------------------------------------------------------------------ incident rollback


def test_one_publisher_may_roll_production_back_to_a_version_it_served_before(publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), note="v2")  # production served v1, now v2
    services.rollback(prompt, acting_user=publisher, note="v2 breaks the support bot", to_version=1)
    assert production_of(prompt) == 1
    incident = AuditEntry.objects.get(action="incident_rollback")
    assert (incident.actor, incident.label, incident.from_version, incident.to_version, incident.note) == (
        publisher, "production", 2, 1, "v2 breaks the support bot")
    assert actions(prompt)[-2:] == ["incident_rollback", "rollback"]


def test_an_incident_rollback_needs_a_reason(publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), note="v2")
    with pytest.raises(InvalidEntry):
        services.rollback(prompt, acting_user=publisher, note="  ", to_version=1)
    assert production_of(prompt) == 2


def test_a_rollback_to_a_version_production_never_served_still_needs_a_review(publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), labels=["staging"], note="v2 on staging only")
    release(edited(prompt, "Three {{ topic }}"), note="v3")  # production: v1 -> v3; v2 never served there
    with pytest.raises(ApprovalRequired):
        services.rollback(prompt, acting_user=publisher, note="go to v2", to_version=2)
    with pytest.raises(ApprovalRequired):  # moving forward is never an incident rollback either
        services.move_label(prompt, label="production", version_number=2, acting_user=publisher, note="x")
    assert production_of(prompt) == 3 and not AuditEntry.objects.filter(action="incident_rollback").exists()


def test_the_admin_rolls_back_at_once_for_an_incident_and_says_so(client, publisher):
    from django.urls import reverse

    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), note="v2")
    client.force_login(publisher)
    url = reverse("admin:registry_prompt_label", args=[prompt.pk])
    page = client.get(url, {"label": "production", "version": 1})
    assert "Incident rollback" in page.text
    done = client.post(url, {"label": "production", "version": 1, "note": "v2 is broken"}, follow=True)
    assert production_of(prompt) == 1 and "incident rollback" in done.text
    assert not ReviewRequest.objects.exists()


def test_an_incident_rollback_never_moves_a_label_forward(publisher):
    """v1 -> v2 -> incident rollback to v1: production served v2 before, but v2 is newer, so a
    "rollback" to it is a forward move and needs a review like any other."""
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), note="v2")
    services.rollback(prompt, acting_user=publisher, note="v2 breaks the support bot", to_version=1)
    with pytest.raises(NotAnOlderVersion) as refused:
        services.rollback(prompt, acting_user=publisher, note="v2 is fine after all", to_version=2)
    assert "v2" in refused.value.message and "v1" in refused.value.message
    with pytest.raises(ApprovalRequired):
        services.move_label(prompt, label="production", version_number=2, acting_user=publisher, note="forward")
    assert production_of(prompt) == 1
    assert AuditEntry.objects.filter(action="incident_rollback").count() == 1


def test_a_rollback_to_the_version_served_now_is_refused(publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), note="v2")
    with pytest.raises(NotAnOlderVersion):
        services.rollback(prompt, acting_user=publisher, note="same", to_version=2)
    assert production_of(prompt) == 2 and not AuditEntry.objects.filter(action="incident_rollback").exists()


def test_even_an_override_does_not_make_a_forward_move_a_rollback(release_manager):
    """The override path moves labels forward through move_label, audited as a label move, never as a rollback."""
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), labels=["staging"], note="v2")
    with pytest.raises(NotAnOlderVersion):
        services.rollback(prompt, acting_user=release_manager, note="go", to_version=2, override_reason="urgent")
    assert production_of(prompt) == 1 and not AuditEntry.objects.filter(action="rollback").exists()


def test_an_incident_rollback_is_judged_by_one_rule_in_the_admin_and_the_service(publisher):
    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), note="v2")
    release(edited(prompt, "Three {{ topic }}"), labels=["staging"], note="v3")
    assert services.is_incident_rollback(prompt, "production", 1)
    assert not services.is_incident_rollback(prompt, "production", 2)  # what it serves now
    assert not services.is_incident_rollback(prompt, "production", 3)  # newer, never served there
    services.rollback(prompt, acting_user=publisher, note="v2 is broken", to_version=1)
    assert not services.is_incident_rollback(prompt, "production", 2)  # served before, but newer
    assert not services.is_incident_rollback(prompt, "staging", 1)  # staging is not protected


def test_the_admin_files_a_review_for_a_forward_move_after_an_incident_rollback(client, publisher):
    from django.urls import reverse

    prompt = make_prompt()
    release(prompt, note="v1")
    release(edited(prompt, "Two {{ topic }}"), note="v2")
    services.rollback(prompt, acting_user=publisher, note="v2 breaks the support bot", to_version=1)
    client.force_login(publisher)
    url = reverse("admin:registry_prompt_label", args=[prompt.pk])
    page = client.get(url, {"label": "production", "version": 2})
    assert "Incident rollback" not in page.text
    client.post(url, {"label": "production", "version": 2, "note": "v2 is fine"}, follow=True)
    assert production_of(prompt) == 1
    assert ReviewRequest.objects.get().version_number == 2
