"""After "Add another argument" the keyboard is on the new row's first field, in a real browser (issue 23).

The new field used to be 32 Tab presses away from the link: the focus stayed on the link and the
rest of the form came first.
"""

from __future__ import annotations

import pytest

from tests.factories import make_prompt, make_user
from tests.registry.test_browser import chromium, csp_violations, log_in  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

IN_VIEW = """el => { const r = el.getBoundingClientRect();
                     return r.top >= 0 && r.bottom <= window.innerHeight; }"""


@pytest.mark.parametrize(("group", "first_field"), [
    ("#arguments-group", "id_arguments-1-name"), ("#messages-group", "id_messages-1-role")])
def test_add_another_row_puts_the_keyboard_on_its_first_field(live_server, chromium, group, first_field):  # noqa: F811
    editor = make_user("Editors")
    prompt = make_prompt(name="add-rows")
    page = chromium.new_context(viewport={"width": 1280, "height": 800}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, editor.username)
    page.goto(f"{live_server.url}/admin/registry/prompt/{prompt.pk}/change/")
    page.locator(f"{group} .add-row a").focus()
    page.keyboard.press("Enter")  # from the keyboard, as the editor who found it did
    page.wait_for_selector(f"#{first_field}")
    assert page.evaluate("document.activeElement.id") == first_field
    assert page.eval_on_selector(f"#{first_field}", IN_VIEW)
    page.keyboard.type("tone" if "arguments" in first_field else "")
    if "arguments" in first_field:
        assert page.input_value(f"#{first_field}") == "tone"
    assert violations == []
