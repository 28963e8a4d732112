"""The main admin pages pass axe-core, the standard accessibility checker, in a real browser.

The people who edit, review and publish prompts are not developers, and some of them use a
screen reader, the keyboard alone or a magnifier. axe-core (bundled in axe-playwright-python,
pinned in requirements.lock: nothing is fetched at test time) checks each page against WCAG
2.x A and AA and best practice; a serious or critical violation fails the test, named by its
rule, the element's selector and the page. The pages: the publisher's and the editor's home,
the prompt list, a prompt's change page (its menus open, and after a failed save), compare,
review, publish, history and the audit log. No rule is switched off and no element left out:
the one finding in Django's own markup (breadcrumb links told apart by colour alone) is fixed by
the registry's stylesheet (registry/static/registry/admin.css).

Every page is checked in English, German and Chinese, each in the light and the dark scheme:
a language changes the words (German labels are the longest, Chinese needs its own font), a
scheme the colours of the registry's badges, diff marks and notices. The six runs take 13 to 17
seconds each, some 90 in all: cheap enough to leave none out.

On a 390px phone WCAG 2.2's target size (axe's target-size, off by default: AA, 24x24 CSS px
unless spaced apart) is checked too, on a list of several prompts and a history of two versions:
Django's filter links and the registry's review buttons were 19 to 20px tall.
"""

from __future__ import annotations

import pytest

from registry.models import EditorPreference, PromptMessage
from tests.factories import make_prompt, release
from tests.registry.test_browser import chromium, log_in  # noqa: F401  (fixture)
from tests.registry.test_browser_layout import pages  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FAILING_IMPACTS = ("serious", "critical")



def serious_violations(page, where: str, rules: list[str] | None = None) -> list[str]:
    """axe's serious and critical findings on the page: "page: rule (impact) at selector: what it asks".
    With `rules`, those rules alone are run (target-size is off in axe's default run)."""
    axe = pytest.importorskip("axe_playwright_python.sync_playwright").Axe()
    options: dict = {"resultTypes": ["violations"]}
    if rules:
        options["runOnly"] = {"type": "rule", "values": rules}
    results = axe.run(page, options=options).response
    found = []
    for violation in results["violations"]:
        if violation["impact"] not in FAILING_IMPACTS:
            continue
        for node in violation["nodes"]:
            target = " ".join(str(part) for part in node["target"])
            found.append(f"{where}: {violation['id']} ({violation['impact']}) at {target}: {violation['help']}")
    return found


def violations_on_the_main_pages(page, base_url: str, users, urls: dict[str, str], *,
                                 rules: list[str] | None = None) -> list[str]:
    """Signed in as the publisher, each page (its header menus opened one by one), a failed save
    of the change page; then the editor's home."""
    publisher, editor = users
    log_in(page, base_url, publisher.username)
    found: list[str] = []
    for name, url in urls.items():
        page.goto(base_url + url)
        page.wait_for_load_state("load")
        found += serious_violations(page, name, rules)
        for menu in page.locator(".object-tools details summary").all():  # "View ▾", "Release ▾" opened
            menu.click()
            found += serious_violations(page, f"{name} ({menu.inner_text()} menu)", rules)
            menu.click()
    # A failed save: the error summary's links to the fields, and the errors at the fields.
    page.goto(base_url + urls["prompt-change"])
    page.fill("#id_messages-0-text", "Greet {{ customer }} briefly.")
    page.click("input[name=_save]")
    page.wait_for_selector(".registry-error-summary")
    found += serious_violations(page, "failed-save", rules)
    page.click("#logout-form button")
    log_in(page, base_url, editor.username)
    found += serious_violations(page, "editor-home", rules)
    return found


def speaking(language: str, *users) -> None:
    for user in users:
        EditorPreference.objects.create(user=user, language=language)


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "de", "zh-hans"])
def test_the_main_admin_pages_have_no_serious_accessibility_violations(
        live_server, chromium, pages, language, scheme):  # noqa: F811
    publisher, editor, urls = pages
    urls = {**urls, "audit-list": "/admin/registry/auditentry/"}
    speaking(language, publisher, editor)
    # axe sets inline styles while it measures, which the site's Content-Security-Policy refuses:
    # the policy is lifted for axe here (the layout test opens the same pages under it).
    page = chromium.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme,
                                bypass_csp=True).new_page()
    page.set_default_timeout(15_000)
    page.goto(live_server.url + "/admin/login/")
    assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (scheme == "dark")
    found = violations_on_the_main_pages(page, live_server.url, (publisher, editor), urls)
    assert page.evaluate("document.documentElement.lang") == language
    assert found == [], "\n".join(found)


@pytest.fixture
def busy_pages(pages):  # noqa: F811
    """The pages of the layout test, with a list of several prompts (a checkbox, a link and badges
    in each row) and the history of a prompt released twice (rollout form, "point here" links)."""
    publisher, editor, urls = pages
    for number in range(4):
        other = make_prompt(name=f"order-status-{number}", description="Tells a customer where the order is")
        release(other, note="v1", labels=("production", "staging"))
        PromptMessage.objects.filter(prompt=other).update(text="Where is order {{ topic }}? In one line.")
    release(other, note="v2", labels=("staging",))
    PromptMessage.objects.filter(prompt=other).update(text="Where is order {{ topic }}? Shortly.")
    return publisher, editor, {**urls, "audit-list": "/admin/registry/auditentry/",
                               "history-two-versions": f"/admin/registry/prompt/{other.pk}/history/"}


@pytest.mark.parametrize("language", ["en", "de"])  # German labels are the longest: buttons wrap
def test_every_control_on_the_main_pages_is_a_24px_target_on_a_phone(
        live_server, chromium, busy_pages, language):  # noqa: F811
    publisher, editor, urls = busy_pages
    speaking(language, publisher, editor)
    page = chromium.new_context(viewport={"width": 390, "height": 844}, bypass_csp=True).new_page()
    page.set_default_timeout(15_000)
    found = violations_on_the_main_pages(page, live_server.url, (publisher, editor), urls, rules=["target-size"])
    assert found == [], "\n".join(found)
