"""The main admin pages pass axe-core, the standard accessibility checker, in a real browser.

The people who edit, review and publish prompts are not developers, and some of them use a
screen reader, the keyboard alone or a magnifier. axe-core (bundled in axe-playwright-python,
pinned in requirements.lock: nothing is fetched at test time) checks each page against WCAG
2.x A and AA and best practice; a serious or critical violation fails the test, named by its
rule, the element's selector and the page. The pages: the publisher's and the editor's home,
the prompt list, a prompt's change page (its menus open, and after a failed save), compare,
review, publish, history and the audit log, in English and German (the light scheme; the
contrast test covers the dark one). No rule is switched off and no element left out: the one
finding in Django's own markup (breadcrumb links told apart by colour alone) is fixed by the
registry's stylesheet (registry/static/registry/admin.css).
"""

from __future__ import annotations

import pytest

from registry.models import EditorPreference
from tests.registry.test_browser import chromium, log_in  # noqa: F401  (fixture)
from tests.registry.test_browser_layout import pages  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FAILING_IMPACTS = ("serious", "critical")


def serious_violations(page, where: str) -> list[str]:
    """axe's serious and critical findings on the page: "page: rule (impact) at selector: what it asks"."""
    axe = pytest.importorskip("axe_playwright_python.sync_playwright").Axe()
    results = axe.run(page, options={"resultTypes": ["violations"]}).response
    found = []
    for violation in results["violations"]:
        if violation["impact"] not in FAILING_IMPACTS:
            continue
        for node in violation["nodes"]:
            target = " ".join(str(part) for part in node["target"])
            found.append(f"{where}: {violation['id']} ({violation['impact']}) at {target}: {violation['help']}")
    return found


@pytest.mark.parametrize("language", ["en", "de"])
def test_the_main_admin_pages_have_no_serious_accessibility_violations(
        live_server, chromium, pages, language):  # noqa: F811
    publisher, editor, urls = pages
    urls = {**urls, "audit-list": "/admin/registry/auditentry/"}
    for user in (publisher, editor):
        EditorPreference.objects.create(user=user, language=language)
    # axe sets inline styles while it measures, which the site's Content-Security-Policy refuses:
    # the policy is lifted for axe here (the layout test opens the same pages under it).
    page = chromium.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light",
                                bypass_csp=True).new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url, publisher.username)
    found: list[str] = []
    for name, url in urls.items():
        page.goto(live_server.url + url)
        page.wait_for_load_state("load")
        assert page.evaluate("document.documentElement.lang") == language, name
        found += serious_violations(page, name)
        for menu in page.locator(".object-tools details summary").all():  # "View ▾", "Release ▾" opened
            menu.click()
            found += serious_violations(page, f"{name} ({menu.inner_text()} menu)")
            menu.click()
    # A failed save: the error summary's links to the fields, and the errors at the fields.
    page.goto(live_server.url + urls["prompt-change"])
    page.fill("#id_messages-0-text", "Greet {{ customer }} briefly.")
    page.click("input[name=_save]")
    page.wait_for_selector(".registry-error-summary")
    found += serious_violations(page, "failed-save")
    page.click("#logout-form button")
    log_in(page, live_server.url, editor.username)
    found += serious_violations(page, "editor-home")
    assert found == [], "\n".join(found)
