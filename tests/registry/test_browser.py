"""The admin in a real browser (Debian's Chromium via Playwright), under the site's Content-Security-Policy.

The editor → preview → publisher → reviewer round trip must work without a single CSP
violation; crafted diff links and markup in entries must run nothing; the API docs must render.
No browser is ever downloaded: the tests drive /usr/bin/chromium and report themselves skipped
when it is not installed (CI's .ci/run installs it with apt).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from registry.models import McpClient, Prompt, PromptLabel, PromptVersion, ReviewRequest, Rollout
from registry.release import reviews
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
    page.wait_for_load_state("load")  # #user-tools is parsed before the rest of the page


def log_out(page) -> None:
    page.click("#logout-form button")
    page.wait_for_selector("text=Logged out")


def csp_violations(page) -> list[str]:
    """Collects Chromium's "Refused to ... Content Security Policy" console reports, across navigations."""
    seen: list[str] = []
    page.on("console", lambda message: seen.append(message.text) if "Content Security Policy" in message.text else None)
    return seen


@pytest.fixture
def chromium(monkeypatch):
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium); the real-browser test did not run")
    sync_playwright = pytest.importorskip("playwright.sync_api").sync_playwright
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # ORM calls between browser steps
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


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
    reviewer = make_user("Publishers")
    prompt = make_prompt(name="browser-tour", description="Explains a topic")
    release(prompt, note="first release")
    change_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/"

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_context().new_page()
            page.set_default_timeout(15_000)
            violations = csp_violations(page)

            # The editor changes the message text of the draft...
            log_in(page, live_server.url, editor.username)
            page.goto(change_url)
            assert page.locator("a.registry-publish").count() == 0  # editors get no Publish button
            page.fill("#id_messages-0-text", "Explain {{ topic }} to a ten-year-old.")
            page.click("input[name=_save]")
            page.wait_for_selector("ul.messagelist li.success")

            # ...previews it with a sample value and sees the rendered text...
            page.goto(change_url)
            page.click(".registry-menu summary:has-text('View')")
            page.click("text=Preview saved draft")
            page.fill("textarea[name=arg-topic]", "volcanoes")
            page.click("input[value='Render preview']")
            page.wait_for_selector(".registry-message")
            assert "Explain volcanoes to a ten-year-old." in page.inner_text(".registry-message")
            assert '"text": "Explain volcanoes to a ten-year-old."' in page.inner_text("#prompt-json")
            log_out(page)

            # ...and a publisher publishes it with a change note.
            log_in(page, live_server.url, publisher.username)
            page.goto(change_url)
            page.click(".registry-menu summary:has-text('Release')")
            page.click("a.registry-publish")
            assert page.is_checked("input[name=labels][value=production]")
            page.fill("#id_note", "Simpler wording for young readers")
            page.click("input[name=publish]")
            page.wait_for_selector("ul.messagelist li.success")
            assert "Published browser-tour as v2" in page.inner_text("ul.messagelist")
            log_out(page)

            # A second publisher reviews the diff and approves (the confirmation is a static script).
            log_in(page, live_server.url, reviewer.username)
            pending = ReviewRequest.objects.get(entry_id=prompt.pk, status="pending")
            page.goto(f"{live_server.url}/admin/registry/reviewrequest/{pending.pk}/change/")
            page.wait_for_selector(".rd-bubble")
            assert "Explain" in page.inner_text(".rd-bubble ins")
            questions: list[str] = []
            page.once("dialog", lambda dialog: (questions.append(dialog.message), dialog.accept()))
            page.click("button[value=approve]")
            page.wait_for_selector("ul.messagelist li.success")
            assert questions and questions[0].startswith("Approve review #")
            assert violations == [], violations  # the whole tour ran under the policy without a refusal
        finally:
            browser.close()

    version = PromptVersion.objects.get(entry=prompt, number=2)
    assert version.change_note == "Simpler wording for young readers"
    assert version.author == publisher
    assert version.snapshot["messages"][0]["content"]["text"] == "Explain {{ topic }} to a ten-year-old."
    # production is protected: the publish filed a review, which the second publisher approved.
    review = ReviewRequest.objects.get(entry_id=prompt.pk)
    assert (review.label, review.version_number, review.requested_by) == ("production", 2, publisher)
    assert (review.status, review.decided_by) == ("approved", reviewer)
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 2


# A payload that, if it ever ran in a publisher's browser, would create an unscoped MCP client.
ATTACK = (
    "window.__xss = 1; fetch('/admin/registry/mcpclient/add/').then(r => r.text()).then(html => {"
    " const form = new DOMParser().parseFromString(html, 'text/html').querySelector('#mcpclient_form');"
    " const data = new FormData(form); data.set('name', 'pwned'); data.set('_save', 'Save');"
    " return fetch('/admin/registry/mcpclient/add/', {method: 'POST', body: data}); })"
    ".then(() => { window.__xssDone = 1; });"
)
PAYLOADS = [f'<img src=x onerror="{ATTACK}">', f"<script>{ATTACK}</script>"]


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_crafted_diff_links_and_markup_in_entries_run_nothing_in_a_publishers_browser(live_server, chromium):
    publisher = make_user("Publishers")
    prompt = make_prompt(name="xss-target")
    release(prompt)
    message = prompt.messages.get()
    message.text = "Tell me about {{ topic }}.\nIn two paragraphs."  # a long text: the diff shows a text comparison
    message.save()
    diff_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/diff/"
    page = chromium.new_context().new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url, publisher.username)

    from urllib.parse import quote

    for payload in PAYLOADS:
        for side in ("a", "b"):
            page.goto(f"{diff_url}?{side}={quote('label:' + payload)}")
            page.wait_for_load_state("load")
            page.wait_for_timeout(300)
            assert page.evaluate("typeof window.__xss") == "undefined"
    # The same markup inside the entry (description, argument title, message text) is shown as text.
    Prompt.objects.filter(pk=prompt.pk).update(description=PAYLOADS[0])
    prompt.arguments.update(title=PAYLOADS[1])
    message.text = f"Tell me about {{{{ topic }}}}.\n{PAYLOADS[0]}\n{PAYLOADS[1]}"
    message.save()
    page.goto(diff_url)
    page.wait_for_selector(".rd-bubble")
    page.wait_for_timeout(300)
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert PAYLOADS[0] in page.inner_text(".rd-bubble")  # readable, as the editor typed it

    # Defence in depth: markup forced into the page (as a missed escape would) is refused by the policy.
    violations = csp_violations(page)
    page.evaluate("""() => {
        document.body.insertAdjacentHTML('beforeend', '<img src="x" onerror="window.__csp = 1">');
        const script = document.createElement('script');
        script.textContent = 'window.__csp = 2';
        document.body.appendChild(script);
    }""")
    page.wait_for_timeout(500)
    assert page.evaluate("typeof window.__csp") == "undefined"
    assert any("inline" in text for text in violations), violations
    assert not McpClient.objects.exists()

    # The payload itself is live: run on purpose (DevTools, outside the page's policy) it creates the client.
    page.evaluate(ATTACK)
    page.wait_for_function("window.__xssDone === 1")
    assert McpClient.objects.filter(name="pwned").exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_api_docs_render_under_their_policy(live_server, chromium):
    reader = make_user("Editors", password=PASSWORD)  # the documentation is for signed-in users
    page = chromium.new_context().new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, reader.username)
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "MCP prompt & resource registry API" in page.inner_text(".swagger-ui .info .title")
    page.wait_for_selector(".opblock-tag")  # the operations, read from /api/schema/
    assert violations == [], violations


def screenshot(page, name: str) -> None:
    """With REGISTRY_SCREENSHOTS=<dir> set, save the page for the README's tour of the admin."""
    folder = os.environ.get("REGISTRY_SCREENSHOTS")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(folder) / f"{name}.png"), full_page=True)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_editor_previews_unsaved_edits_sees_errors_and_badges_and_a_publisher_rolls_out_from_history(
        live_server, chromium):
    editor = make_user("Editors")
    publisher = make_user("Publishers")
    prompt = make_prompt(name="support-reply", description="Answers a customer",
                         arguments=[{"name": "customer_name", "required": True}],
                         messages=[{"role": "user", "kind": "text", "text": "Greet {{ customer_name }} warmly."}])
    release(prompt, note="v1", labels=("production", "staging"))
    change_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/"
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, editor.username)

    # Unsaved edit -> Preview: the panel renders the form as it is, and nothing is saved.
    page.goto(change_url)
    assert page.is_hidden("fieldset.registry-kind-file")  # a text message shows no file fields
    page.fill("#id_messages-0-text", "Greet {{ customer_name }} briefly.")
    page.click("[data-registry-preview-button]")
    page.wait_for_selector("[data-registry-preview-output] textarea[name=arg-customer_name]")
    page.fill("[data-registry-preview-output] textarea[name=arg-customer_name]", "Ada")
    page.click("[data-registry-preview-button]")
    page.wait_for_selector("[data-registry-preview-output] .registry-message")
    assert "Greet Ada briefly." in page.inner_text("[data-registry-preview-output] .registry-message")
    assert '"text": "Greet Ada briefly."' in page.inner_text(".registry-preview-json")
    assert prompt.messages.get().text == "Greet {{ customer_name }} warmly."
    screenshot(page, "change-page-preview")

    # Leaving with the unsaved edit asks first.
    asked: list[str] = []
    page.once("dialog", lambda dialog: (asked.append(dialog.type), dialog.dismiss()))
    page.click(".registry-menu summary:has-text('View')")
    page.click("text=History")
    page.wait_for_timeout(500)
    assert asked == ["beforeunload"] and page.url == change_url

    # A misspelt placeholder: the error is at the faulty message, with a suggestion.
    page.fill("#id_messages-0-text", "Greet {{ customer }} briefly.")
    page.click("input[name=_save]")
    error = page.wait_for_selector(".inline-related .field-text .errorlist")
    assert "Did you mean customer_name?" in error.inner_text()  # the name as <code>, no backticks
    page.fill("#id_messages-0-text", "Greet {{ customer_name }} briefly.")
    page.click("input[name=_save]")
    page.wait_for_selector("ul.messagelist li.success")

    # The change list says what state the entry is in.
    page.goto(f"{live_server.url}/admin/registry/prompt/")
    assert "draft changed since v1" in page.inner_text(".registry-badge-changed")
    reviews.request_publication(prompt, acting_user=editor, note="Shorter greeting", label="production")
    page.reload()
    assert "in review #" in page.inner_text(".registry-badge-review")
    screenshot(page, "change-list-badges")
    page.goto(f"{live_server.url}/admin/")
    screenshot(page, "home-editor")
    log_out(page)

    # A publisher publishes v2 without labels, then rolls it out to 10% of staging from the history page.
    log_in(page, live_server.url, publisher.username)
    page.goto(f"{live_server.url}/admin/")
    assert "Waiting for your review (1)" in page.inner_text("#registry-waiting")
    screenshot(page, "home-publisher")
    page.click("#registry-waiting a")
    page.wait_for_selector("button.registry-approve")
    screenshot(page, "review-page")
    from registry.release import services

    services.publish(prompt, acting_user=publisher, note="Shorter greeting", labels=[])
    page.goto(f"{live_server.url}/admin/registry/prompt/{prompt.pk}/history/")
    row = page.locator("tr.registry-version", has_text="Roll v2 out")
    row.locator("select[name=label]").select_option("staging")
    row.locator("input[name=percent]").fill("10")
    row.locator("button:has-text('Roll v2 out')").click()
    page.wait_for_selector("ul.messagelist li.success")
    assert "v2 now goes to 10% of the clients of 'staging'" in page.inner_text("ul.messagelist").lower()
    rollout = Rollout.objects.get()
    assert (rollout.label, rollout.candidate_version, rollout.percent) == ("staging", 2, 10)
    assert violations == [], violations


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_german_and_a_chinese_editor_work_in_their_own_language_in_a_real_browser(live_server, chromium):
    from registry.models import EditorPreference

    german = make_user("Editors")
    EditorPreference.objects.create(user=german, language="de")
    chinese = make_user("Editors")  # no preference yet: chooses the language on the Language page
    prompt = make_prompt(name="sprachen", description="Explains a topic")
    release(prompt, note="first release")
    change_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/"

    # The German editor's browser asks for English; the saved preference wins from the login on.
    page = chromium.new_context(locale="en-US", extra_http_headers={"Accept-Language": "en"}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, german.username)
    assert page.get_attribute("html", "lang") == "de"
    home = page.text_content("#content")  # as written (the admin's CSS upper-cases headings)
    assert "Prompts, Ressourcen und ihre Releases" in home  # the project's strings
    assert "Schreiben" in home  # the home's task groups (registry/admin/home.py), not Django's app list
    assert "Abmelden" in page.text_content("#user-tools")  # Django's own admin
    assert page.text_content("#registry-language-link") == "Sprache"
    page.goto(change_url)
    page.click(".registry-menu summary:has-text('Ansicht')")
    assert page.is_visible("text=Vorschau des gespeicherten Entwurfs")
    assert "Beschreibung" in page.inner_text("#prompt_form")
    assert page.get_attribute("input[name=_save]", "value") == "Sichern"
    page.fill("#id_messages-0-text", "   ")
    page.click("input[name=_save]")
    assert "Der Text ist leer." in page.inner_text(".inline-related .field-text .errorlist")
    screenshot(page, "change-page-de")
    assert violations == [], violations

    # The Chinese editor switches on the Language page; every later page is in Chinese.
    page = chromium.new_context(locale="en-US", extra_http_headers={"Accept-Language": "en"}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, chinese.username)
    assert page.get_attribute("html", "lang") == "en"
    page.click("#registry-language-link")
    page.select_option("#id_language", "zh-hans")
    page.click("#registry-language-form input[type=submit]")
    page.wait_for_selector("ul.messagelist li.success")
    assert page.get_attribute("html", "lang") == "zh-hans"
    assert "提示词、资源及其发布" in page.inner_text("#content")
    assert EditorPreference.objects.get(user=chinese).language == "zh-hans"
    page.goto(change_url)
    page.click(".registry-menu summary:has-text('查看')")
    assert page.is_visible("text=预览已保存的草稿")
    assert "描述" in page.inner_text("#prompt_form")
    assert page.get_attribute("input[name=_save]", "value") == "保存"
    screenshot(page, "change-page-zh-hans")
    assert violations == [], violations


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_one_publisher_rolls_production_back_for_an_incident_and_another_sees_the_notice(live_server, chromium):
    from registry.models import AuditEntry, PromptMessage

    on_call = make_user("Publishers")
    colleague = make_user("Publishers")
    prompt = make_prompt(name="refund-bot", description="Answers refund questions")
    release(prompt, note="v1")
    PromptMessage.objects.filter(prompt=prompt).update(text="Refund everything about {{ topic }}.")
    release(prompt, note="v2")  # production: v1, then v2 (so it served v1 before)
    change_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/"

    page = chromium.new_context().new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, on_call.username)
    page.goto(change_url)
    page.click(".registry-menu summary:has-text('Release')")
    page.click("a.registry-rollback")
    assert "Incident rollback." in page.inner_text("#content")  # no second publisher needed for v1
    page.fill("#id_note", "v2 promises refunds we do not give")
    page.click("input[value='Yes, roll back']")
    page.wait_for_selector("ul.messagelist li.success")
    assert "recorded as an incident rollback" in page.inner_text("ul.messagelist")
    assert PromptLabel.objects.get(entry=prompt, name="production").version.number == 1
    assert AuditEntry.objects.filter(action="incident_rollback", actor=on_call).exists()
    log_out(page)

    log_in(page, live_server.url, colleague.username)
    notice = page.inner_text("#registry-incidents")
    assert on_call.username in notice and "refund-bot" in notice and "production" in notice
    assert "v2 → v1" in notice and "v2 promises refunds we do not give" in notice
    screenshot(page, "home-incident-notice")
    page.click("#registry-incidents a:has-text('refund-bot')")
    page.wait_for_selector("tr.registry-version")
    assert "/history/" in page.url
    assert violations == [], violations


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("width", [1280, 1024])
def test_a_prompt_change_page_with_typed_arguments_fits_the_window(live_server, chromium, width):
    """An argument has fourteen fields: as a table row they made the page 2,700 px wide, so an
    editor scrolled sideways to find "required". Stacked, every field is in the window."""
    editor = make_user("Editors", password=PASSWORD)
    prompt = make_prompt(name="wide-form", arguments=[{"name": "tone", "required": True}],
                         messages=[{"role": "user", "kind": "text", "text": "Write in a {{ tone }} tone."}])
    page = chromium.new_context(viewport={"width": width, "height": 900}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, editor.username)
    page.goto(f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/")
    page.wait_for_selector("#id_arguments-0-name")
    page_width = page.evaluate("() => document.documentElement.scrollWidth")
    assert page_width <= width, f"the page is {page_width}px wide in a {width}px window"
    assert page.is_visible("#id_arguments-0-name") and page.is_visible("#id_arguments-0-required")
    # Only the limits of the chosen type stand in the form, labels included.
    assert page.is_visible("#id_arguments-0-pattern") and page.is_hidden("#id_arguments-0-choices")
    page.select_option("#id_arguments-0-type", "enum")
    assert page.is_visible("#id_arguments-0-choices") and page.is_hidden("label[for=id_arguments-0-pattern]")
    page.select_option("#id_arguments-0-type", "integer")
    assert page.is_visible("#id_arguments-0-minimum") and page.is_hidden("#id_arguments-0-choices")
    assert page.is_hidden("text=Text: fewest characters.")  # help texts go with their fields
    assert page.evaluate("() => document.documentElement.scrollWidth") <= width
    assert violations == [], violations


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_save_message_shows_a_link_to_the_entry_and_a_forged_messages_cookie_shows_nothing(live_server, chromium):
    """The admin's own message markup renders (a link, not "<a href=…>"); a cookie's never does."""
    from django.contrib.messages import constants
    from django.contrib.messages.storage.base import Message
    from django.contrib.messages.storage.cookie import CookieStorage
    from django.test import RequestFactory
    from django.utils.safestring import mark_safe

    editor = make_user("Editors")
    prompt = make_prompt(name="message-link")
    change_url = f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/"
    context = chromium.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url, editor.username)
    page.goto(change_url)
    page.fill("#id_title", "Linked")
    page.click("input[name=_save]")
    page.wait_for_selector("ul.messagelist li.success")
    message = page.locator("ul.messagelist li.success")
    assert "<a" not in message.inner_text() and "message-link" in message.inner_text()
    link = message.locator("a")
    assert link.inner_text() == "message-link"
    assert link.get_attribute("href") == f"/admin/registry/prompt/{prompt.pk}/change/"

    forged = CookieStorage(RequestFactory().get("/"))._encode(
        [Message(constants.INFO, mark_safe('<img id="forged" src=x onerror="window.__xss=1">'))])
    context.add_cookies([{"name": CookieStorage.cookie_name, "value": forged, "url": live_server.url}])
    page.goto(f"{live_server.url}/admin/")
    page.wait_for_load_state("load")
    page.wait_for_timeout(300)
    assert page.locator("#forged").count() == 0
    assert page.evaluate("typeof window.__xss") == "undefined"


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_saving_imported_entries_unchanged_in_a_real_browser_changes_nothing(live_server, chromium, tmp_path):
    """Chromium posts text areas with CR LF and drops line breaks from inputs: an unchanged save is still a no-op."""
    from registry.models import AuditEntry, Resource, ResourceTemplate
    from registry.portable.importer import export_yaml, import_documents
    from tests.factories import UNTRIMMED_YAML

    (tmp_path / "doc.yaml").write_text(UNTRIMMED_YAML, encoding="utf-8")
    import_documents(tmp_path / "doc.yaml", publish=False)
    exported = export_yaml()
    editor = make_user("Editors")
    pages = [f"prompt/{Prompt.objects.get(name='spaced').pk}", f"resource/{Resource.objects.get().pk}",
             f"resourcetemplate/{ResourceTemplate.objects.get().pk}"]
    page = chromium.new_context().new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url, editor.username)
    for path in pages:
        page.goto(f"{live_server.url}/admin/registry/{path}/change/")
        page.click("input[name=_save]")
        page.wait_for_selector("ul.messagelist li.success")
    assert not AuditEntry.objects.filter(action="edit").exists()
    assert export_yaml() == exported
