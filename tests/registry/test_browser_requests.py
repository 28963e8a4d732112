"""Requesting a release and seeing a request go stale, in a real browser (issue 23): the label box
offers the labels in use and refuses a typo with a suggestion; an edit after the request shows
the request stale in the queue and on its page, with no Approve button, under the site's CSP."""

from __future__ import annotations

import pytest

from registry.models import ReviewRequest
from tests.factories import make_prompt, make_user
from tests.registry.test_browser import chromium, csp_violations, log_in, log_out  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_typo_in_the_label_is_caught_and_a_stale_request_is_shown_stale(live_server, chromium):  # noqa: F811
    editor, publisher = make_user("Editors"), make_user("Publishers")
    prompt = make_prompt(name="browser-request", description="Says hello")
    page = chromium.new_context().new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)

    log_in(page, live_server.url, editor.username)
    page.goto(f"{live_server.url}/admin/registry/prompt/{prompt.pk}/request/")
    offered = page.eval_on_selector_all("#id_label-options option", "options => options.map(o => o.value)")
    assert offered[:2] == ["production", "staging"]
    assert page.get_attribute("#id_label", "list") == "id_label-options"
    page.fill("#id_label", "prodution")
    page.fill("#id_note", "First release")
    page.click("input[type=submit][value='Request review']")
    assert "Did you mean 'production'?" in page.inner_text(".errorlist")
    assert not ReviewRequest.objects.exists()
    page.fill("#id_label", "production")
    page.click("input[type=submit][value='Request review']")
    page.wait_for_selector("ul.messagelist li.success")
    review = ReviewRequest.objects.get()

    page.goto(f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/")
    page.fill("#id_description", "Says hello warmly")
    page.click("input[name=_save]")
    page.wait_for_selector("ul.messagelist li.success")
    log_out(page)

    log_in(page, live_server.url, publisher.username)
    page.goto(f"{live_server.url}/admin/registry/reviewrequest/")
    status = page.inner_text(f"tr:has(a:text-is('#{review.pk}')) td.field-status_badge")
    assert status == "Stale: it can no longer be approved as asked"
    page.goto(f"{live_server.url}/admin/registry/reviewrequest/{review.pk}/change/")
    assert "Stale: it can no longer be approved as asked" in page.inner_text("#content")
    assert page.locator("button[value=approve]").count() == 0
    assert violations == []
