"""After a failed save the editor is taken to the first error, in a real browser (issue 23).

The page used to open at the top with "Please correct the error below." while the faulty message
sat some 1,900 px lower, and the suggestion showed literal backticks. Now a summary at the top
links to every error, the first faulty field has the focus and is on screen, and the suggestion
shows the argument's name as code.
"""

from __future__ import annotations

import pytest

from tests.factories import make_prompt, make_user
from tests.registry.test_browser import chromium, csp_violations, log_in  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IN_VIEW = """el => { const r = el.getBoundingClientRect();
                     return r.top >= 0 && r.bottom <= window.innerHeight; }"""


def test_a_failed_save_takes_the_editor_to_the_first_error_and_links_every_error(live_server, chromium):  # noqa: F811
    editor = make_user("Editors")
    messages = [{"role": "user", "kind": "text", "text": f"Step {n}: greet {{{{ customer_name }}}}."} for n in range(8)]
    prompt = make_prompt(name="long-prompt", description="Many messages",
                         arguments=[{"name": "customer_name", "required": True}], messages=messages)
    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, editor.username)
    page.goto(f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/")
    page.fill("#id_messages-7-text", "Greet {{ customer }} at the end.")
    page.click("input[name=_save]")
    page.wait_for_selector("[data-registry-error-summary]")

    # The keyboard is on the faulty text box, and it is on screen.
    assert page.evaluate("document.activeElement.id") == "id_messages-7-text"
    assert page.eval_on_selector("#id_messages-7-text", IN_VIEW)
    assert page.evaluate("window.scrollY") > 800  # it is far below the top: the page moved there

    # The summary names where the problem is and shows the suggestion as code, no backticks.
    summary = page.locator("[data-registry-error-summary]")
    link = summary.locator("a[href='#id_messages-7-text']")
    assert "Prompt message 8 · Text" in link.inner_text()
    assert "Did you mean customer_name?" in link.inner_text()
    assert link.locator("code").inner_text() == "customer_name"
    field_error = page.locator(".inline-related .field-text .errorlist")
    assert field_error.locator("code").inner_text() == "customer_name"
    assert "`" not in field_error.inner_text() + summary.inner_text()

    # From the top of the page, the summary's link takes the editor back to the field.
    page.evaluate("window.scrollTo(0, 0); document.activeElement.blur()")
    assert summary.is_visible() and summary.evaluate(IN_VIEW)
    link.click()
    assert page.evaluate("document.activeElement.id") == "id_messages-7-text"
    assert page.eval_on_selector("#id_messages-7-text", IN_VIEW)
    assert violations == []
