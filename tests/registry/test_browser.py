"""The editor → preview → publisher round trip in a real browser (Debian's Chromium via Playwright).

No browser is ever downloaded: the test drives /usr/bin/chromium and reports itself skipped
when it is not installed (CI's .ci/run installs it with apt).
"""

from __future__ import annotations

import os

import pytest

from registry.models import PromptLabel, PromptVersion, ReviewRequest
from tests.factories import make_prompt, make_user, release

CHROMIUM = "/usr/bin/chromium"
PASSWORD = "pw-for-tests-1"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def log_in(page, base_url: str, username: str) -> None:
    page.goto(f"{base_url}/admin/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#user-tools")


def log_out(page) -> None:
    page.click("#logout-form button")
    page.wait_for_selector("text=Logged out")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_editor_edits_and_previews_then_publisher_publishes_in_a_real_browser(live_server, monkeypatch):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); the real-browser test did not run")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    # Playwright's sync API keeps an event loop running in this thread; the ORM calls below are
    # ordinary blocking calls made between browser steps, which is safe here.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    editor = make_user("Editors")
    publisher = make_user("Publishers")
    prompt = make_prompt(name="browser-tour", description="Explains a topic")
    release(prompt, note="first release")
    change_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            page.set_default_timeout(15_000)

            # The editor changes the message text of the draft...
            log_in(page, live_server.url, editor.username)
            page.goto(change_url)
            assert page.locator("a.registry-publish").count() == 0  # editors get no Publish button
            page.fill("#id_messages-0-text", "Explain {{ topic }} to a ten-year-old.")
            page.click("input[name=_save]")
            page.wait_for_selector("ul.messagelist li.success")

            # ...previews it with a sample value and sees the rendered text...
            page.goto(change_url)
            page.click("text=Preview")
            page.fill("textarea[name=arg-topic]", "volcanoes")
            page.click("input[value='Render preview']")
            page.wait_for_selector(".registry-message")
            assert "Explain volcanoes to a ten-year-old." in page.inner_text(".registry-message")
            assert '"text": "Explain volcanoes to a ten-year-old."' in page.inner_text("#prompt-json")
            log_out(page)

            # ...and a publisher publishes it with a change note.
            log_in(page, live_server.url, publisher.username)
            page.goto(change_url)
            page.click("a.registry-publish")
            assert page.is_checked("input[name=labels][value=production]")
            page.fill("#id_note", "Simpler wording for young readers")
            page.click("input[name=publish]")
            page.wait_for_selector("ul.messagelist li.success")
            assert "Published browser-tour as v2" in page.inner_text("ul.messagelist")
        finally:
            browser.close()

    version = PromptVersion.objects.get(entry=prompt, number=2)
    assert version.change_note == "Simpler wording for young readers"
    assert version.author == publisher
    assert version.snapshot["messages"][0]["content"]["text"] == "Explain {{ topic }} to a ten-year-old."
    # production is protected: it still serves v1 until another publisher approves the filed review.
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 1
    review = ReviewRequest.objects.get(entry_id=prompt.pk, status="pending")
    assert (review.label, review.version_number, review.requested_by) == ("production", 2, publisher)
