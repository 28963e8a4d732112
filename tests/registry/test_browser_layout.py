"""The main admin pages fit a laptop and a phone, in a real browser.

An editor who scrolls sideways to find "Save", or whose "Approve" button hides half under
another, is stuck. Each page (home, prompt list, prompt change page with its message and
argument inlines, compare, review, publish and history pages) is opened at 1280x800 and at 390x844:
the page must be no wider than the window, and every primary button must be whole in the
window's width, show its whole label and overlap no other.
"""

from __future__ import annotations

import pytest

from registry.models import EditorPreference, PromptMessage, ReviewRequest
from registry.release import reviews
from tests.factories import make_prompt, make_user, release
from tests.registry.test_browser import chromium, csp_violations, log_in, screenshot  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

SIZES = {"laptop": (1280, 800), "phone": (390, 844)}

# The buttons an editor, publisher or reviewer acts with.
PRIMARY_BUTTONS = (".submit-row input[type=submit], .submit-row a.button, .submit-row button, "
                   ".submit-row a.deletelink, .submit-row a.closelink, .object-tools a, .object-tools summary, "
                   "#changelist-search input[type=submit], .actions button")

# Problems of the page as a list of sentences (empty: it fits). A button inside a closed menu or
# otherwise not rendered is skipped; one that is rendered must be whole and clear of the others.
LAYOUT_PROBLEMS = """selector => {
  const problems = [];
  const width = window.innerWidth;
  const pageWidth = document.documentElement.scrollWidth;
  if (pageWidth > width + 1) {
    const wide = [...document.querySelectorAll("body *")]
      .filter(el => el.getBoundingClientRect().right > width + 1 && el.getClientRects().length)
      .slice(-3).map(el => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "")
                           + (typeof el.className === "string" && el.className
                              ? "." + el.className.split(" ")[0] : ""));
    problems.push(`the page is ${pageWidth}px wide in a ${width}px window (${wide.join(", ")})`);
  }
  const name = el => ((el.value || el.innerText || "").trim()
                     || el.getAttribute("title") || el.getAttribute("aria-label") || el.outerHTML).slice(0, 60);
  const shown = [...document.querySelectorAll(selector)].filter(el => {
    const r = el.getBoundingClientRect(), style = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && el.checkVisibility({visibilityProperty: true});
  });
  for (const el of shown) {
    const r = el.getBoundingClientRect();
    if (r.left < -1 || r.right > width + 1) {
      problems.push(`"${name(el)}" reaches ${Math.round(r.left)}..${Math.round(r.right)}px of ${width}px`);
    }
    if (el.scrollWidth > el.clientWidth + 1 && el.tagName !== "INPUT") {
      problems.push(`"${name(el)}" cuts its label (${el.scrollWidth}px in ${el.clientWidth}px)`);
    }
    if (el.tagName === "INPUT") {  // an input's label cannot overflow the box: measure the text
      const canvas = document.createElement("canvas").getContext("2d");
      const style = getComputedStyle(el);
      canvas.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
      const text = canvas.measureText(el.value).width;
      const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
      if (text > room + 1) { problems.push(`"${name(el)}" cuts its label (${Math.round(text)}px in ${room}px)`); }
    }
  }
  for (let i = 0; i < shown.length; i++) {
    for (let j = i + 1; j < shown.length; j++) {
      if (shown[i].contains(shown[j]) || shown[j].contains(shown[i])) { continue; }
      const a = shown[i].getBoundingClientRect(), b = shown[j].getBoundingClientRect();
      const x = Math.min(a.right, b.right) - Math.max(a.left, b.left);
      const y = Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top);
      if (x > 1 && y > 1) { problems.push(`"${name(shown[i])}" overlaps "${name(shown[j])}"`); }
    }
  }
  return problems;
}"""


@pytest.fixture
def pages(db):
    """A publisher, an editor, and the URL of each page for a prompt with two arguments, two messages, a
    production version, an edited draft and a pending review of it."""
    publisher = make_user("Publishers")
    editor = make_user("Editors")
    prompt = make_prompt(
        name="customer-support-reply-for-refund-requests",
        description="Answers a customer who asks for a refund, in the tone the team chose",
        arguments=[{"name": "customer_name", "required": True}, {"name": "order_reference", "required": False}],
        messages=[{"role": "user", "kind": "text", "text": "Greet {{ customer_name }} warmly and thank them."},
                  {"role": "assistant", "kind": "text", "text": "Which order is it about? {{ order_reference }}"}],
    )
    release(prompt, note="v1", labels=("production", "staging"))
    PromptMessage.objects.filter(prompt=prompt, position=0).update(
        text="Greet {{ customer_name }} briefly, then ask for the order reference.")
    reviews.request_publication(prompt, acting_user=editor, note="Shorter greeting", label="production")
    review = ReviewRequest.objects.get()
    admin = "/admin/registry"
    return publisher, editor, {
        "home": "/admin/",
        "prompt-list": f"{admin}/prompt/",
        "prompt-change": f"{admin}/prompt/{prompt.pk}/change/",
        "compare": f"{admin}/prompt/{prompt.pk}/diff/",
        "review": f"{admin}/reviewrequest/{review.pk}/change/",
        "publish": f"{admin}/prompt/{prompt.pk}/publish/",
        "history": f"{admin}/prompt/{prompt.pk}/history/",
    }


@pytest.mark.parametrize("language", ["en", "de"])  # German labels are the longest
@pytest.mark.parametrize("size", SIZES)
def test_the_main_admin_pages_fit_the_window_with_whole_buttons(
        live_server, chromium, pages, size, language):  # noqa: F811
    publisher, editor, urls = pages
    for user in (publisher, editor):
        EditorPreference.objects.create(user=user, language=language)
    shot = f"{size}" if language == "en" else f"{size}-{language}"
    width, height = SIZES[size]
    page = chromium.new_context(viewport={"width": width, "height": height}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    log_in(page, live_server.url, publisher.username)
    problems = {}
    for name, url in urls.items():
        page.goto(live_server.url + url)
        page.wait_for_load_state("load")
        found = page.evaluate(LAYOUT_PROBLEMS, PRIMARY_BUTTONS)
        screenshot(page, f"layout-{name}-{shot}")
        for menu in page.locator(".object-tools details summary").all():  # "View ▾", "Release ▾"
            menu.click()
            found += [f"{menu.inner_text()} menu: {problem}" for problem in
                      page.evaluate(LAYOUT_PROBLEMS, ".object-tools details[open] ul a")]
            menu.click()
        if found:
            problems[name] = found
    # The editor's home lists their own requests and entries: a home of its own.
    page.click("#logout-form button")
    log_in(page, live_server.url, editor.username)
    found = page.evaluate(LAYOUT_PROBLEMS, PRIMARY_BUTTONS)
    if found:
        problems["editor-home"] = found
    screenshot(page, f"layout-editor-home-{shot}")
    assert problems == {}, problems
    assert violations == [], violations
