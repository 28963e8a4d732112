"""A reviewer of a snippet sees its downstream effect in a real browser: a publisher opens the review
request of a snippet's draft and reads, for the prompt that includes it, the text its clients are
served now and the text they would be served after approval, under the site's CSP; the review page
and the snippet's change page (with its "Used by" panel) have no serious axe-core finding."""

from __future__ import annotations

import pytest

from registry.models import PRODUCTION
from registry.release import reviews
from tests.factories import make_prompt, make_snippet, make_user, release
from tests.registry.test_browser import chromium, csp_violations, log_in  # noqa: F401  (fixture)
from tests.registry.test_browser_axe import serious_violations

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_publisher_reviewing_a_snippet_sees_the_dependent_prompt_before_and_after(live_server, chromium):  # noqa: F811
    editor, publisher = make_user("Editors"), make_user("Publishers")
    house = make_snippet("house-style", text="Answer kindly.")
    release(house, note="v1")
    prompt = make_prompt("support-reply", messages=[
        {"role": "user", "kind": "text", "text": "{{> house-style }} The question: {{ topic }}"}])
    release(prompt, note="uses the house style")
    house.text = "Answer briefly."
    house.save()
    review = reviews.request_publication(house, acting_user=editor, note="shorter answers", label=PRODUCTION)

    page = chromium.new_context().new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, publisher.username)
    page.goto(f"{live_server.url}/admin/registry/reviewrequest/{review.pk}/change/")
    dependent = page.locator("#registry-downstream .registry-dependent", has_text="support-reply")
    assert dependent.count() == 1
    bubble = dependent.locator(".rd-bubble .rd-text")
    assert bubble.inner_text() == "Answer kindlybriefly. The question: {{ topic }}"
    assert bubble.locator("del").inner_text() == "kindly"
    assert bubble.locator("ins").inner_text() == "briefly"
    assert page.locator("button[value=approve]").count() == 1
    assert serious_violations(page, "snippet review") == []
    dependent.locator("h4 a", has_text="support-reply").click()
    page.wait_for_url(f"**/admin/registry/prompt/{prompt.pk}/change/")

    page.goto(f"{live_server.url}/admin/registry/snippet/{house.pk}/change/")
    used_by = page.inner_text("#registry-used-by")
    assert "support-reply" in used_by and "production" in used_by
    assert violations == []  # checked before axe-core, which injects styles of its own
    assert serious_violations(page, "snippet change page") == []
