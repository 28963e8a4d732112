"""Scheduled releases: approve with a go-live time, carried out once at that time, stale, cancelled, moved."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from registry.authoring import drafts
from registry.errors import InvalidEntry, PublishPermissionDenied, ReviewClosed
from registry.models import AuditEntry, ChangeLogEntry, ReviewStatus, ScheduledRelease, ScheduleStatus
from registry.release import reviews, schedules, services
from tests.factories import make_prompt, make_user, release

pytestmark = pytest.mark.django_db


def save(prompt, user, description: str) -> None:
    data = drafts.draft_data(prompt)
    data["description"] = description
    drafts.save_draft(prompt, data, acting_user=user)


def scheduled(editor, publisher, *, minutes: int = 30, **request):
    prompt = make_prompt()
    release(prompt)
    save(prompt, editor, "For the launch")
    review = reviews.request_publication(prompt, acting_user=editor, note="Launch text", **request)
    when = timezone.now() + timedelta(minutes=minutes)
    reviews.approve(review, acting_user=publisher, comment="Go at launch", go_live_at=when)
    review.refresh_from_db()
    return prompt, review, when


def production(prompt) -> int:
    return prompt.labels.get(name="production").version.number


def test_approving_with_a_go_live_time_changes_nothing_until_then(editor, publisher):
    prompt, review, when = scheduled(editor, publisher)
    assert review.status == ReviewStatus.SCHEDULED and review.decided_by == publisher
    row = review.schedules.get()
    assert (row.status, row.go_live_at, row.scheduled_by) == (ScheduleStatus.SCHEDULED, when, publisher)
    assert production(prompt) == 1 and prompt.versions.count() == 1
    assert "to go live at" in AuditEntry.objects.get(action="review_approved").note
    assert schedules.run_due() == []  # not due yet
    assert 1799 < schedules.next_due_in() <= 1800


def test_at_its_time_the_release_goes_live_once_as_the_approver_audited_and_announced(editor, publisher):
    prompt, review, when = scheduled(editor, publisher)
    changes_before = ChangeLogEntry.objects.count()
    [row] = schedules.run_due(now=when + timedelta(seconds=1))
    assert (row.status, row.result_version) == (ScheduleStatus.DONE, 2)
    review.refresh_from_db()
    assert (review.status, review.result_version) == (ReviewStatus.APPROVED, 2)
    assert production(prompt) == 2
    version = prompt.versions.get(number=2)
    assert version.author == editor and version.author_name == editor.username  # the requester's version
    assert f"approved by {publisher.username} in review #{review.pk}" in version.change_note
    move = AuditEntry.objects.get(action="label_move", to_version=2)
    assert move.actor == publisher and move.actor_name == f"scheduled by {publisher.username}"
    assert AuditEntry.objects.filter(action="release_went_live").count() == 1
    assert ChangeLogEntry.objects.count() > changes_before  # clients are told as of any release
    assert schedules.run_due(now=when + timedelta(hours=1)) == []  # never twice


def test_a_draft_changed_before_go_live_is_not_released_and_both_are_told(editor, publisher):
    prompt, review, when = scheduled(editor, publisher)
    save(prompt, editor, "Changed after approval")
    assert AuditEntry.objects.filter(action="review_stale").count() == 1
    [row] = schedules.run_due(now=when)
    assert row.status == ScheduleStatus.FAILED and "draft" in row.outcome
    review.refresh_from_db()
    assert review.status == ReviewStatus.FAILED
    assert production(prompt) == 1 and prompt.versions.count() == 1
    failed = AuditEntry.objects.get(action="release_failed")
    assert failed.actor == publisher and "did not go live" in failed.note
    again = reviews.request_again(review, acting_user=editor)
    assert again.status == ReviewStatus.PENDING and again.previous == review


def test_a_label_moved_before_go_live_fails_the_release(editor, publisher, release_manager):
    prompt, _review, when = scheduled(editor, publisher, label="staging")
    services.publish(prompt, acting_user=release_manager, note="hotfix", labels=["staging"])
    [row] = schedules.run_due(now=when)
    assert row.status == ScheduleStatus.FAILED and "'staging'" in row.outcome


def test_a_go_live_time_in_the_past_is_refused_and_nothing_is_decided(editor, publisher):
    prompt = make_prompt()
    review = reviews.request_publication(prompt, acting_user=editor, note="x")
    with pytest.raises(InvalidEntry, match="has passed"):
        reviews.approve(review, acting_user=publisher, go_live_at=timezone.now() - timedelta(seconds=1))
    review.refresh_from_db()
    assert review.status == ReviewStatus.PENDING and not ScheduledRelease.objects.exists()
    assert not AuditEntry.objects.filter(action="review_approved").exists()


def test_a_cancelled_release_never_goes_live_and_the_request_waits_again(editor, publisher, second_publisher):
    prompt, review, when = scheduled(editor, publisher)
    with pytest.raises(PublishPermissionDenied):
        schedules.cancel(review, acting_user=make_user("Editors"))
    row = schedules.cancel(review, acting_user=second_publisher, reason="launch moved")
    assert row.status == ScheduleStatus.CANCELLED and row.finished_by_name == second_publisher.username
    review.refresh_from_db()
    assert review.status == ReviewStatus.PENDING
    assert schedules.run_due(now=when) == [] and production(prompt) == 1
    assert "launch moved" in AuditEntry.objects.get(action="release_cancelled").note
    with pytest.raises(ReviewClosed):
        schedules.cancel(review, acting_user=second_publisher)
    reviews.approve(review, acting_user=second_publisher)  # decided again, now
    assert production(prompt) == 2


def test_the_requester_may_cancel_and_a_publisher_may_move_the_time(editor, publisher):
    _prompt, review, when = scheduled(editor, publisher)
    later = when + timedelta(hours=2)
    with pytest.raises(PublishPermissionDenied):
        schedules.reschedule(review, acting_user=editor, go_live_at=later)
    schedules.reschedule(review, acting_user=publisher, go_live_at=later)
    assert schedules.run_due(now=when) == []
    assert AuditEntry.objects.get(action="release_rescheduled").changes[0]["field"] == "go_live_at"
    schedules.cancel(review, acting_user=editor)
    assert schedules.run_due(now=later) == []


def test_a_scheduled_rollout_starts_at_its_time(editor, publisher):
    prompt = make_prompt()
    release(prompt)
    save(prompt, editor, "Candidate")
    services_version = reviews.request_publication(prompt, acting_user=editor, note="try", percent=10)
    when = timezone.now() + timedelta(minutes=5)
    reviews.approve(services_version, acting_user=publisher, go_live_at=when)
    [row] = schedules.run_due(now=when)
    assert row.status == ScheduleStatus.DONE
    from registry.models import Rollout

    rollout = Rollout.objects.get()
    assert (rollout.candidate_version, rollout.percent) == (2, 10)
    assert rollout.updated_by_name == f"scheduled by {publisher.username}"


@pytest.mark.django_db(transaction=True)
def test_two_workers_racing_for_one_scheduled_release_move_the_label_once():
    if connection.vendor == "sqlite":
        pytest.skip("concurrent connections need PostgreSQL (DATABASE_URL=$TEST_POSTGRES_URL); on SQLite the "
                    "two-process test (tests/registry/test_worker.py) covers it")
    editor, publisher = make_user("Editors"), make_user("Publishers")
    prompt, _review, when = scheduled(editor, publisher)
    start = threading.Barrier(2)
    results: list[object] = []

    def worker() -> None:
        from django.db import connection as own

        try:
            start.wait()
            results.append(schedules.run_due(now=when))
        except BaseException as exc:
            results.append(exc)
        finally:
            own.close()

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert sorted(len(r) for r in results) == [0, 1], results  # type: ignore[arg-type]
    assert AuditEntry.objects.filter(action="label_move", to_version=2).count() == 1
    assert AuditEntry.objects.filter(action="release_went_live").count() == 1
    assert production(prompt) == 2


def test_a_release_failing_for_an_outage_is_retried_later_and_never_holds_up_the_next(editor, publisher, monkeypatch):
    first, first_review, when = scheduled(editor, publisher, minutes=30)
    second, second_review, _later = scheduled(editor, publisher, minutes=31)
    carry_out = reviews.carry_out

    def storage_down_for_the_first(review, *args, **kwargs):
        if review.pk == first_review.pk:
            raise OSError("content store unreachable")
        return carry_out(review, *args, **kwargs)

    monkeypatch.setattr(reviews, "carry_out", storage_down_for_the_first)
    moment = when + timedelta(minutes=2)
    [done] = schedules.run_due(now=moment)
    assert done.review_id == second_review.pk and production(second) == 2  # the next one went live
    row = first_review.schedules.get()
    assert (row.status, row.attempts, production(first)) == (ScheduleStatus.SCHEDULED, 1, 1)
    assert "content store unreachable" in row.last_error and row.retry_at > moment
    assert schedules.run_due(now=moment + timedelta(seconds=1)) == []  # not before its retry time
    monkeypatch.setattr(reviews, "carry_out", carry_out)  # the store is back
    [again] = schedules.run_due(now=row.retry_at + timedelta(seconds=1))
    assert again.pk == row.pk and production(first) == 2
    assert AuditEntry.objects.filter(action="release_went_live").count() == 2


def test_a_release_that_keeps_failing_is_recorded_as_failed_and_its_people_are_told(editor, publisher, monkeypatch):
    for person in (editor, publisher):
        person.email = f"{person.username}@example.com"
        person.save()
    prompt, review, when = scheduled(editor, publisher)
    monkeypatch.setattr(reviews, "carry_out", lambda *args, **kwargs: 1 / 0)
    moment = when
    for _attempt in schedules.RETRY_S:
        moment += timedelta(hours=1)
        assert schedules.run_due(now=moment) == []
    moment += timedelta(hours=1)
    [gave_up] = schedules.run_due(now=moment)
    assert gave_up.pk == review.schedules.get().pk
    row = review.schedules.get()
    assert (row.status, row.attempts) == (ScheduleStatus.FAILED, len(schedules.RETRY_S) + 1)
    review.refresh_from_db()
    assert review.status == ReviewStatus.FAILED and production(prompt) == 1
    audit = AuditEntry.objects.get(action="release_failed")
    assert "ZeroDivisionError" in audit.note and f"after {len(schedules.RETRY_S) + 1} attempts" in audit.note
    from registry.models import MailMessage

    assert set(MailMessage.objects.filter(audit=audit).values_list("recipient", flat=True)) == {editor.pk, publisher.pk}


def test_a_new_go_live_time_starts_the_attempts_afresh(editor, publisher, monkeypatch):
    _prompt, review, when = scheduled(editor, publisher)
    monkeypatch.setattr(reviews, "carry_out", lambda *args, **kwargs: 1 / 0)
    schedules.run_due(now=when + timedelta(seconds=1))
    assert review.schedules.get().attempts == 1
    schedules.reschedule(review, acting_user=publisher, go_live_at=timezone.now() + timedelta(days=1))
    row = review.schedules.get()
    assert (row.attempts, row.retry_at, row.last_error) == (0, None, "")
