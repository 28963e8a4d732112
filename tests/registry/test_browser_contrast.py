"""The registry's own colours are readable in the light and the dark scheme, in a real browser.

Django's admin follows the browser's prefers-color-scheme; the registry's own CSS
(registry/static/registry/: badges, diff marks, chat bubbles, notices, dashboard panels, review
comments) must follow it too. Every element of the registry's own markup (a class starting
"registry-" or "rd-", and what it holds) that shows text is measured: its text colour against
its effective background (the first ancestor's that is not transparent, semi-transparent layers
blended, opacity counted), which must reach WCAG AA, 4.5:1 (3:1 for large text).
"""

from __future__ import annotations

import pytest

from registry.models import AuditEntry, PromptMessage, ReviewRequest
from registry.release import discussion, reviews, services
from tests.factories import make_prompt, make_user, release
from tests.registry.test_browser import chromium, csp_violations, log_in, screenshot  # noqa: F401  (fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Offenders on the page: "what (text): ratio fg on bg", for every shown text of the registry's own markup.
LOW_CONTRAST = """() => {
  const parse = value => {
    const m = value.match(/rgba?\\(([^)]+)\\)/);
    if (!m) { return null; }
    const parts = m[1].split(/[ ,\\/]+/).filter(Boolean).map(Number);
    return {r: parts[0], g: parts[1], b: parts[2], a: parts.length > 3 ? parts[3] : 1};
  };
  const over = (top, bottom, alpha) => ({r: top.r * alpha + bottom.r * (1 - alpha),
    g: top.g * alpha + bottom.g * (1 - alpha), b: top.b * alpha + bottom.b * (1 - alpha), a: 1});
  const background = el => {
    const layers = [];
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      const colour = parse(getComputedStyle(node).backgroundColor);
      if (colour && colour.a > 0) { layers.push(colour); if (colour.a >= 1) { break; } }
    }
    let result = {r: 255, g: 255, b: 255, a: 1};  // the canvas, under everything
    for (const layer of layers.reverse()) { result = over(layer, result, layer.a); }
    return result;
  };
  const luminance = c => {
    const channel = v => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * channel(c.r) + 0.7152 * channel(c.g) + 0.0722 * channel(c.b);
  };
  const ratio = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
                            return (x + 0.05) / (y + 0.05); };
  const hex = c => "#" + [c.r, c.g, c.b].map(v => Math.round(v).toString(16).padStart(2, "0")).join("");
  const own = [...document.querySelectorAll("[class*='registry-'], [class*='rd-']")];
  const candidates = new Set();
  for (const root of own) { candidates.add(root); root.querySelectorAll("*").forEach(el => candidates.add(el)); }
  const offenders = [];
  for (const el of candidates) {
    const text = [...el.childNodes].filter(n => n.nodeType === 3).map(n => n.textContent).join("").trim();
    if (!text || !el.checkVisibility({visibilityProperty: true, opacityProperty: true})) { continue; }
    if (el.closest(".visually-hidden, [hidden]")) { continue; }
    const style = getComputedStyle(el);
    let opacity = 1;
    for (let node = el; node && node.nodeType === 1; node = node.parentElement) {
      opacity *= Number(getComputedStyle(node).opacity);
    }
    const bg = background(el);
    const fg = parse(style.color);
    const shown = over(fg, bg, fg.a * opacity);
    const size = parseFloat(style.fontSize), bold = Number(style.fontWeight) >= 700;
    const needed = (size >= 24 || (bold && size >= 18.66)) ? 3 : 4.5;
    const measured = ratio(shown, bg);
    if (measured < needed) {
      const what = el.tagName.toLowerCase() + [...el.classList].map(c => "." + c).join("");
      offenders.push(`${what} (${text.slice(0, 30)}): ${measured.toFixed(2)}:1 ${hex(shown)} on ${hex(bg)}`);
    }
  }
  return [...new Set(offenders)].sort();
}"""


@pytest.fixture
def registry_in_use(db):
    """A registry with something in every state the registry's colours mark: a pending review
    with a discussion and a request for changes, an approved request with a comment, a rejected
    one, a stale one, an edited draft, an incident rollback; and the URLs that show them."""
    editor, publisher, on_call = make_user("Editors"), make_user("Publishers"), make_user("Publishers")
    pending = make_prompt(
        name="support-reply", description="Answers a customer",
        arguments=[{"name": "customer_name", "required": True}],
        messages=[{"role": "user", "kind": "text", "text": "Greet {{ customer_name }} warmly."},
                  {"role": "assistant", "kind": "text", "text": "Hello! How can I help?"}])
    release(pending, note="v1", labels=("production", "staging"))
    PromptMessage.objects.filter(prompt=pending, position=0).update(text="Greet {{ customer_name }} briefly.")
    review = reviews.request_publication(pending, acting_user=editor, note="Shorter greeting")
    discussion.comment(review, acting_user=publisher, text="Is briefly too curt for a complaint?")
    discussion.request_changes(review, acting_user=publisher, text="Keep the thanks, please.")

    for name, decide in (("approved-one", "approve"), ("rejected-one", "reject"), ("stale-one", None)):
        entry = make_prompt(name=name, description=f"The {name} prompt")
        release(entry, note="v1", labels=("production",))
        PromptMessage.objects.filter(prompt=entry).update(text="Tell me about {{ topic }}, shortly.")
        asked = reviews.request_publication(entry, acting_user=editor, note=f"{name} request")
        if decide == "approve":
            reviews.approve(asked, acting_user=publisher, comment="Reads well, thank you.")
        elif decide == "reject":
            reviews.reject(asked, acting_user=publisher, comment="Not before the launch.")
        else:
            PromptMessage.objects.filter(prompt=entry).update(text="Tell me about {{ topic }} at length.")

    incident = make_prompt(name="refund-bot", description="Answers refund questions")
    release(incident, note="v1")
    PromptMessage.objects.filter(prompt=incident).update(text="Refund everything about {{ topic }}.")
    release(incident, note="v2")
    services.rollback(incident, acting_user=on_call, note="v2 promises refunds we do not give", to_version=1)
    assert AuditEntry.objects.filter(action="incident_rollback").exists()

    admin = "/admin/registry"
    urls = {
        "home": "/admin/",
        "prompt-list": f"{admin}/prompt/",
        "prompt-change": f"{admin}/prompt/{pending.pk}/change/",
        "compare": f"{admin}/prompt/{pending.pk}/diff/",
        "review": f"{admin}/reviewrequest/{review.pk}/change/",
        "stale-review": f"{admin}/reviewrequest/{ReviewRequest.objects.get(entry_key='stale-one').pk}/change/",
        "history": f"{admin}/prompt/{pending.pk}/history/",
    }
    return {"editor": editor, "publisher": publisher, "urls": urls, "pending": pending}


# The browser's scheme, and what the admin's theme switch was set to (None: left on "auto").
SCHEMES = {"light": ("light", None), "dark": ("dark", None),
           "switched-dark": ("light", "dark"), "switched-light": ("dark", "light")}


@pytest.mark.parametrize("scheme", SCHEMES)
def test_the_registrys_own_colours_reach_aa_contrast(live_server, chromium, registry_in_use, scheme):  # noqa: F811
    urls = registry_in_use["urls"]
    browser_scheme, switch = SCHEMES[scheme]
    page = chromium.new_context(viewport={"width": 1280, "height": 800}, color_scheme=browser_scheme).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    offenders: dict[str, list[str]] = {}

    def measure(name: str) -> None:
        page.wait_for_load_state("load")
        found = page.evaluate(LOW_CONTRAST)
        if found:
            offenders[name] = found
        if scheme == "dark":  # the light pages look as in the other screenshots
            screenshot(page, f"dark-{name}")

    log_in(page, live_server.url, registry_in_use["publisher"].username)
    if switch:
        page.evaluate("theme => localStorage.setItem('theme', theme)", switch)  # as the admin's switch does
        page.reload()
    assert page.evaluate("matchMedia('(prefers-color-scheme: dark)').matches") == (browser_scheme == "dark")
    assert page.evaluate("document.documentElement.dataset.theme") == (switch or "auto")
    for name, url in urls.items():
        page.goto(live_server.url + url)
        measure(name)
    # A failed save: the error summary and the errors at the fields, with the suggestion in code.
    page.goto(live_server.url + urls["prompt-change"])
    page.fill("#id_messages-0-text", "Greet {{ customer }} briefly.")
    page.click("input[name=_save]")
    page.wait_for_selector(".registry-error-summary")
    measure("failed-save")
    # The in-page preview: its messages and JSON.
    page.fill("#id_messages-0-text", "Greet {{ customer_name }} briefly.")
    page.click("[data-registry-preview-button]")
    page.fill("[data-registry-preview-output] textarea[name=arg-customer_name]", "Ada")
    page.click("[data-registry-preview-button]")
    page.wait_for_selector("[data-registry-preview-output] .registry-message")
    measure("preview")

    page.click("#logout-form button")
    log_in(page, live_server.url, registry_in_use["editor"].username)
    measure("editor-home")
    assert offenders == {}, "\n".join(f"{name}: {o}" for name, found in offenders.items() for o in found)
    assert violations == [], violations
