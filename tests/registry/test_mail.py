"""E-mail to people, sent through a real SMTP server on loopback: who is told of what, in which language,
with which link; retried through an outage; never twice."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from registry.admin.language import save_language
from registry.authoring import drafts
from registry.mail import sending
from registry.models import EditorPreference, MailKind, MailMessage, MailStatus, ReviewStatus
from registry.release import discussion, reviews, schedules, services
from tests.factories import make_prompt, make_user, release
from tests.registry.conftest import PUBLIC_URL
from tests.registry.smtp_server import SmtpServer

pytestmark = pytest.mark.django_db


@pytest.fixture
def people(db):
    return {"editor": make_user("Editors", email="@"), "publisher": make_user("Publishers", email="@"),
            "other": make_user("Publishers", email="@"), "silent": make_user("Publishers")}


def save(prompt, user, description: str) -> None:
    data = drafts.draft_data(prompt)
    data["description"] = description
    drafts.save_draft(prompt, data, acting_user=user)


def filed(people, name: str = "support-reply"):
    prompt = make_prompt(name)
    release(prompt)
    save(prompt, people["editor"], "Friendlier")
    return prompt, reviews.request_publication(prompt, acting_user=people["editor"], note="Friendlier tone <b>now</b>")


def addresses(messages) -> set[str]:
    return {str(m["To"]) for m in messages}


def test_a_review_request_is_mailed_to_the_publishers_who_may_decide_it_with_a_link(smtp, people):
    _prompt, review = filed(people)
    assert sending.send_due() and sending.send_due() == []  # each once
    assert addresses(smtp.messages) == {people["publisher"].email, people["other"].email}  # not the requester
    message = smtp.to(people["publisher"].email)[0]
    text, html = SmtpServer.parts(message)
    link = f"{PUBLIC_URL}/admin/registry/reviewrequest/{review.pk}/change/"
    assert f"Review requested: review #{review.pk}, support-reply → production" in message["Subject"]
    assert link in text and f'href="{link}"' in html
    assert "Friendlier tone <b>now</b>" in text and "Friendlier tone &lt;b&gt;now&lt;/b&gt;" in html  # autoescaped
    assert message["Auto-Submitted"] == "auto-generated"
    assert MailMessage.objects.filter(status=MailStatus.SENT).count() == 2


def test_each_message_speaks_its_recipients_language(smtp, people):
    save_language(people["publisher"], "de")
    save_language(people["other"], "zh-hans")
    filed(people)
    sending.send_due()
    german = smtp.to(people["publisher"].email)[0]
    chinese = smtp.to(people["other"].email)[0]
    assert str(german["Subject"]).strip().startswith("[MCP-Registry] Prüfung beantragt: Review #")
    assert "bittet Sie um das Review" in SmtpServer.parts(german)[0]
    assert str(chinese["Subject"]).strip().startswith("[MCP 注册中心] 已申请审核")
    assert "请您审核" in SmtpServer.parts(chinese)[0] and "打开审核" in SmtpServer.parts(chinese)[1]
    assert MailMessage.objects.get(recipient=people["publisher"]).language == "de"
    assert MailMessage.objects.get(recipient=people["other"]).language == "zh-hans"
    assert SmtpServer.parts(german)[0] != SmtpServer.parts(chinese)[0]


def test_a_kind_turned_off_and_a_user_without_an_address_get_nothing(smtp, people):
    EditorPreference.objects.create(user=people["other"], mail_off=[MailKind.REVIEW_REQUESTED])
    filed(people)
    sending.send_due()
    assert addresses(smtp.messages) == {people["publisher"].email}
    assert not MailMessage.objects.filter(recipient__in=[people["other"], people["silent"]]).exists()


def test_changes_requested_a_reply_and_the_decision_reach_the_other_side_with_the_discussion(smtp, people):
    _prompt, review = filed(people)
    sending.send_due()
    discussion.request_changes(review, acting_user=people["publisher"], text="Drop the exclamation marks.")
    discussion.comment(review, acting_user=people["editor"], text="Dropped them.")
    reviews.reject(review, acting_user=people["publisher"], comment="Too late for this week")
    sending.send_due()
    to_editor = smtp.to(people["editor"].email)
    assert [m["Subject"].split(":")[0].split("] ")[1] for m in to_editor] == ["Changes requested", "Rejected"]
    text, _html = SmtpServer.parts(to_editor[-1])
    assert "Drop the exclamation marks." in text and "Dropped them." in text and "Too late for this week" in text
    reply = smtp.to(people["publisher"].email)[-1]
    assert "New comment" in reply["Subject"] and "Dropped them." in SmtpServer.parts(reply)[0]
    assert people["other"].email not in addresses(smtp.messages[2:])  # took no part in the discussion


def test_a_draft_change_tells_the_requester_once_that_the_request_went_stale(smtp, people):
    prompt, _review = filed(people)
    save(prompt, people["editor"], "Changed again")
    save(prompt, people["editor"], "And again")
    sending.send_due()
    stale = [m for m in smtp.to(people["editor"].email) if "Went stale" in m["Subject"]]
    assert len(stale) == 1 and "Ask again" in SmtpServer.parts(stale[0])[0]


def test_an_incident_rollback_tells_every_publisher_and_the_authors_rolled_back(smtp, people):
    prompt = make_prompt("incident")
    release(prompt)
    save(prompt, people["editor"], "v2 text")
    review = reviews.request_publication(prompt, acting_user=people["editor"], note="v2")
    reviews.approve(review, acting_user=people["publisher"])
    MailMessage.objects.all().delete()
    services.rollback(prompt, acting_user=people["other"], note="v2 answers wrongly", label="production")
    sending.send_due()
    assert addresses(smtp.messages) == {people["publisher"].email, people["editor"].email}  # not the one who did it
    text, _html = SmtpServer.parts(smtp.messages[0])
    assert "v2 answers wrongly" in text and f"{PUBLIC_URL}/admin/registry/prompt/{prompt.pk}/history/" in text


def test_a_scheduled_release_tells_requester_and_approver_when_it_goes_live(smtp, people):
    _prompt, review = filed(people)
    when = timezone.now() + timedelta(minutes=10)
    reviews.approve(review, acting_user=people["publisher"], go_live_at=when)
    sending.send_due()
    approved = smtp.to(people["editor"].email)[-1]
    assert "goes live" in SmtpServer.parts(approved)[0]
    schedules.run_due(now=when)
    sending.send_due()
    live = [m for m in smtp.messages if "Went live" in m["Subject"]]
    assert addresses(live) == {people["editor"].email, people["publisher"].email}


def test_a_failed_scheduled_release_tells_both(smtp, people):
    prompt, review = filed(people)
    when = timezone.now() + timedelta(minutes=10)
    reviews.approve(review, acting_user=people["publisher"], go_live_at=when)
    save(prompt, people["editor"], "changed before go-live")
    schedules.run_due(now=when)
    sending.send_due()
    failed = [m for m in smtp.messages if "Scheduled release failed" in m["Subject"]]
    assert addresses(failed) == {people["editor"].email, people["publisher"].email}
    stale = [m for m in smtp.messages if "Went stale" in m["Subject"]]
    assert addresses(stale) == {people["editor"].email, people["publisher"].email}


def test_an_smtp_outage_leaves_the_release_done_and_the_mail_pending_until_the_server_is_back(smtp, people):
    _prompt, review = filed(people)
    smtp.stop()  # the mail server goes down
    reviews.approve(review, acting_user=people["other"])  # the release itself is not affected
    review.refresh_from_db()
    assert review.status == ReviewStatus.APPROVED and review.result_version == 2
    start = timezone.now()
    attempted = sending.send_due(now=start)
    assert attempted and {m.status for m in attempted} == {MailStatus.PENDING}
    assert all((m.attempts == 1 and "Connection" in m.last_error) or "refused" in m.last_error for m in attempted)
    assert sending.send_due(now=start + timedelta(seconds=30)) == []  # not before the backoff step
    smtp.start()  # back on the same port
    retry = start + timedelta(seconds=sending.BACKOFF_S[0])
    sent = sending.send_due(now=retry)
    assert {m.status for m in sent} == {MailStatus.SENT} and len(sent) == len(attempted)
    assert MailMessage.objects.exclude(status=MailStatus.SENT).count() == 0  # nothing lost
    assert len(smtp.messages) == MailMessage.objects.count()


def test_a_message_that_cannot_be_delivered_fails_after_the_last_attempt(smtp, people):
    filed(people)
    smtp.stop()
    when = timezone.now()
    for _step in range(len(sending.BACKOFF_S) + 1):
        sending.send_due(now=when)
        when += timedelta(days=1)
    assert set(MailMessage.objects.values_list("status", flat=True)) == {MailStatus.FAILED}
    assert sending.send_due(now=when) == []


def test_the_worker_carries_out_releases_sends_mail_and_delivers_webhooks_in_one_pass(smtp, people, capsys,
                                                                                      settings):
    from webhooks.models import Webhook, WebhookDelivery

    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8"
    Webhook.objects.create(name="ci", url="http://127.0.0.1:9/closed", events=["label.moved"])
    _prompt, review = filed(people)
    past = timezone.now() - timedelta(seconds=1)
    reviews.approve(review, acting_user=people["publisher"], go_live_at=timezone.now() + timedelta(seconds=60))
    review.schedules.update(go_live_at=past)
    call_command("registry_worker", "--once")
    out = capsys.readouterr().out
    assert f"release of review #{review.pk}: done" in out and "e-mail:" in out
    # Releases run first in a pass, so the mail they queue goes out in the same pass.
    assert any("Went live" in m["Subject"] for m in smtp.messages)
    assert WebhookDelivery.objects.filter(attempts__gte=1).exists()  # the webhook was attempted by the worker


def test_one_event_queues_one_message_per_person_whatever_happens(people):
    _prompt, review = filed(people)
    from registry.mail.queue import audit_recorded
    from registry.models import AuditEntry

    row = AuditEntry.objects.get(action="review_requested")
    audit_recorded(sender=AuditEntry, entry=row, review=review)  # the same event announced again
    assert MailMessage.objects.filter(audit=row).count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_server_process_sends_after_commit_in_its_sender_thread_and_the_thread_then_ends(smtp, monkeypatch):
    import time

    monkeypatch.setattr(sending.sender, "enabled", lambda: True)  # as under daphne or uvicorn
    people = {"editor": make_user("Editors", email="@"), "publisher": make_user("Publishers", email="@"),
              "other": make_user("Publishers", email="@"), "silent": make_user("Publishers")}
    filed(people)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not (len(smtp.messages) == 2 and sending.sender.thread is None):
        time.sleep(0.05)
    assert addresses(smtp.messages) == {people["publisher"].email, people["other"].email}
    assert sending.sender.thread is None


def test_only_server_processes_send_in_a_thread(settings):
    from registry import outbox

    assert outbox.is_server_process(["/venv/bin/daphne", "config.asgi:application"])
    assert not outbox.is_server_process(["manage.py", "registry_import", "x.yaml"])
    assert not sending.thread_enabled()  # pytest is no server


def test_manage_py_check_warns_when_mail_goes_out_with_links_to_nowhere(settings):
    from registry.mail.checks import check_public_url

    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST = "smtp.example.com"
    settings.REGISTRY = {**settings.REGISTRY, "PUBLIC_URL": ""}
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "PUBLIC_URL": ""}
    assert [w.id for w in check_public_url()] == ["registry.W101"]
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "PUBLIC_URL": "https://registry.example.com/mcp"}
    assert check_public_url() == []
    settings.EMAIL_HOST = "localhost"
    settings.MCP_ENDPOINT = {**settings.MCP_ENDPOINT, "PUBLIC_URL": ""}
    assert check_public_url() == []


def test_an_address_refused_for_good_fails_at_once_and_the_others_go(smtp, people):
    smtp.refuse(people["other"].email, "550 5.1.1 No such user")
    filed(people)
    sending.send_due()
    assert addresses(smtp.messages) == {people["publisher"].email}
    refused = MailMessage.objects.get(recipient=people["other"])
    assert refused.status == MailStatus.FAILED and refused.attempts == 1 and "550" in refused.last_error


def test_a_temporary_refusal_is_retried_and_delivered_later(smtp, people):
    smtp.refuse(people["other"].email, "451 4.7.1 Greylisted, try again later")
    filed(people)
    start = timezone.now()
    sending.send_due(now=start)
    waiting = MailMessage.objects.get(recipient=people["other"])
    assert (waiting.status, waiting.attempts) == (MailStatus.PENDING, 1) and "451" in waiting.last_error
    smtp.refuse(people["other"].email, None)
    sending.send_due(now=start + timedelta(seconds=sending.BACKOFF_S[0] + 1))
    assert people["other"].email in addresses(smtp.messages)
    assert MailMessage.objects.get(recipient=people["other"]).status == MailStatus.SENT


def test_a_batch_whose_lease_ran_out_sends_nothing_its_new_holder_sent(smtp, people):
    filed(people)
    slow = sending.claim()  # a worker claims the batch, then stalls past the lease
    assert len(slow) == 2
    MailMessage.objects.update(leased_until=timezone.now() - timedelta(seconds=1))
    assert len(sending.send_due()) == 2  # another worker takes them over and sends them
    assert sending._send_batch(slow, now=None) == []  # the stalled one wakes: nothing is sent twice
    assert len(smtp.messages) == 2


def test_a_kind_turned_off_after_the_mail_was_queued_is_not_sent(smtp, people):
    filed(people)
    EditorPreference.objects.create(user=people["other"], mail_off=[MailKind.REVIEW_REQUESTED])
    sending.send_due()
    assert addresses(smtp.messages) == {people["publisher"].email}
    skipped = MailMessage.objects.get(recipient=people["other"])
    assert skipped.status == MailStatus.FAILED and "turned this kind of e-mail off" in skipped.last_error
