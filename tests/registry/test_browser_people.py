"""People in the loop, in a real browser (Chromium via Playwright, the harness of test_browser.py): an editor
requests, the publisher gets the e-mail from a real SMTP server and follows its link, asks for changes with a
comment, the editor replies and fixes, the publisher approves with a go-live time, the worker releases at that
time, and both are told by e-mail."""

from __future__ import annotations

import re
import time

import pytest
from django.core.management import call_command
from django.utils import timezone

from registry.mail import sending
from registry.models import ReviewRequest, ReviewStatus
from tests.factories import make_prompt, make_user, release
from tests.registry.smtp_server import SmtpServer
from tests.registry.test_browser import chromium, csp_violations, log_in, screenshot  # noqa: F401  (fixture)


def link_in(message, base_url: str) -> str:
    text, _html = SmtpServer.parts(message)
    found = re.search(re.escape(base_url) + r"/admin/registry/reviewrequest/\d+/change/", text)
    assert found, text
    return found.group(0)


def newest_to(smtp, address: str, subject: str):
    found = [m for m in smtp.to(address) if subject in str(m["Subject"])]
    assert found, [str(m["Subject"]) for m in smtp.to(address)]
    return found[-1]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_request_mail_changes_reply_fix_scheduled_approval_and_release_in_a_real_browser(
        live_server, chromium, smtp, settings):  # noqa: F811
    settings.REGISTRY = {**settings.REGISTRY, "PUBLIC_URL": live_server.url}
    editor = make_user("Editors", email="@")
    publisher = make_user("Publishers", email="@")
    prompt = make_prompt(name="welcome-mail", description="Greets a new customer")
    release(prompt, note="first release")
    change_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/"

    as_editor = chromium.new_context().new_page()
    as_publisher = chromium.new_context().new_page()
    for page in (as_editor, as_publisher):
        page.set_default_timeout(15_000)
    editor_seen, publisher_seen = csp_violations(as_editor), csp_violations(as_publisher)

    # The editor changes the draft and asks for it to be released.
    log_in(as_editor, live_server.url, editor.username)
    as_editor.goto(change_url)
    as_editor.fill("#id_messages-0-text", "Welcome aboard, {{ topic }}!")
    as_editor.click("input[name=_save]")
    as_editor.wait_for_selector("ul.messagelist li.success")
    as_editor.goto(change_url)
    as_editor.click(".registry-menu summary:has-text('Release')")
    as_editor.click("a.registry-request")
    as_editor.fill("#id_note", "A warmer welcome")
    as_editor.click("input[type=submit][value='Request review']")
    as_editor.wait_for_selector("ul.messagelist li.success")

    # The publisher is told by e-mail and follows its link to the review page...
    sending.send_due()
    review_link = link_in(newest_to(smtp, publisher.email, "Review requested"), live_server.url)
    log_in(as_publisher, live_server.url, publisher.username)
    as_publisher.goto(review_link)
    as_publisher.wait_for_selector("#registry-discussion")
    # ...and asks for changes with a comment.
    as_publisher.fill("#id_comment", "Please name the team: 'Welcome aboard from the support team'.")
    as_publisher.click("button[value=changes]")
    as_publisher.wait_for_selector("ul.messagelist li.success")

    # The editor hears of it, replies in the discussion and fixes the draft...
    sending.send_due()
    asked = newest_to(smtp, editor.email, "Changes requested")
    assert "Please name the team" in SmtpServer.parts(asked)[0]
    as_editor.goto(link_in(asked, live_server.url))
    as_editor.fill("#id_comment", "Good idea, done.")
    as_editor.click("button[value=comment]")
    as_editor.wait_for_selector("ul.messagelist li.success")
    as_editor.goto(change_url)
    as_editor.fill("#id_messages-0-text", "Welcome aboard from the support team, {{ topic }}!")
    as_editor.click("input[name=_save]")
    as_editor.wait_for_selector("ul.messagelist li.success")
    # ...which makes the request stale, so they ask again with the fixed draft.
    as_editor.goto(link_in(asked, live_server.url))
    as_editor.wait_for_selector("#registry-stale")
    as_editor.click("button[value=again]")
    as_editor.wait_for_selector("ul.messagelist li.success")
    screenshot(as_editor, "review-discussion-editor")

    # The publisher gets the new request, sees the whole discussion and approves it with a go-live time.
    sending.send_due()
    again_link = link_in(newest_to(smtp, publisher.email, "Review requested"), live_server.url)
    assert again_link != review_link
    as_publisher.goto(again_link)
    discussion = as_publisher.inner_text("#registry-discussion")
    assert "Please name the team" in discussion and "Good idea, done." in discussion
    go_live = timezone.localtime(timezone.now()).replace(microsecond=0) + timezone.timedelta(seconds=4)
    as_publisher.fill("#id_go_live_at", go_live.strftime("%Y-%m-%dT%H:%M:%S"))
    as_publisher.fill("#id_comment", "Ship it at the top of the hour.")
    screenshot(as_publisher, "review-discussion-publisher")
    as_publisher.click("button[value=schedule]")
    as_publisher.wait_for_selector("ul.messagelist li.success")
    assert "Goes live at" in as_publisher.inner_text("#registry-schedule")
    review = ReviewRequest.objects.get(previous__isnull=False)
    assert review.status == ReviewStatus.SCHEDULED
    assert prompt.labels.get(name="production").version.number == 1  # nothing served before its time

    # After the go-live time one worker pass releases it and tells both.
    while timezone.now() <= go_live:
        time.sleep(0.2)
    call_command("registry_worker", "--once")
    review.refresh_from_db()
    assert (review.status, review.result_version) == (ReviewStatus.APPROVED, 2)
    assert prompt.labels.get(name="production").version.snapshot["messages"][0]["content"]["text"] == (
        "Welcome aboard from the support team, {{ topic }}!")
    for person in (editor, publisher):
        live = newest_to(smtp, person.email, "Went live")
        assert "serves v2" in SmtpServer.parts(live)[0]
    as_publisher.goto(again_link)
    assert "Went live" in as_publisher.inner_text("#registry-schedule")
    assert editor_seen == [] and publisher_seen == [], (editor_seen, publisher_seen)
