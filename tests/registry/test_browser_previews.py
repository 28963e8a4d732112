"""Previews in a real browser (Debian's Chromium): a Markdown resource's unsaved edit is shown
rendered beside its text with nothing from the document run; "Preview saved draft" with unsaved
edits previews the edits in the page instead of asking "Leave site?" and showing the old text; a
brand-new entry is previewed before its first save."""

from __future__ import annotations

import pytest

from registry.models import Resource, Snippet
from tests.factories import make_resource, make_user
from tests.registry.test_browser import chromium, csp_violations, log_in  # noqa: F401  (fixture)

HOSTILE = ("# Release plan\n\n<img src=x onerror=\"document.title='owned'\">\n\n"
           "[click](javascript:document.title='owned')\n")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_markdown_edit_is_previewed_in_place_rendered_and_inert(live_server, chromium):  # noqa: F811
    editor = make_user("Editors")
    resource = make_resource("docs://plan", text="# Old plan", mime_type="text/markdown")
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.type), dialog.dismiss()))
    log_in(page, live_server.url, editor.username)
    change_url = f"{live_server.url}/admin/registry/resource/{resource.pk}/change/"
    page.goto(change_url)
    page.fill("#id_text", HOSTILE)
    page.click(".registry-menu summary:has-text('View')")
    page.click("[data-registry-preview-saved]")
    page.wait_for_selector("[data-registry-preview-output] [data-registry-markdown] h1")
    assert dialogs == [] and page.url == change_url  # no "Leave site?", and the edits are still here
    assert page.inner_text("[data-registry-preview-output] [data-registry-markdown] h1") == "Release plan"
    assert "onerror" in page.inner_text("[data-registry-preview-output] .registry-document-text")
    assert page.locator("[data-registry-markdown] img").count() == 0
    assert page.locator("[data-registry-markdown] a[href^='javascript']").count() == 0
    assert page.title() != "owned" and page.input_value("#id_text") == HOSTILE
    assert Resource.objects.get(pk=resource.pk).text == "# Old plan"
    assert violations == []


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_a_new_snippet_is_previewed_before_its_first_save(live_server, chromium):  # noqa: F811
    editor = make_user("Editors")
    page = chromium.new_context(viewport={"width": 390, "height": 844}).new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url, editor.username)
    page.goto(f"{live_server.url}/admin/registry/snippet/add/")
    page.fill("#id_name", "house-style")
    page.fill("#id_text", "Answer in two sentences.")
    page.click("[data-registry-preview-button]")
    page.wait_for_selector("[data-registry-preview-output] pre")
    assert "Answer in two sentences." in page.inner_text("[data-registry-preview-output] pre")
    assert not Snippet.objects.exists()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("language", ["en", "de", "zh-hans"])
def test_the_markdown_previews_pass_axe_in_every_language_and_scheme(live_server, chromium, language, scheme):  # noqa: F811
    from registry.models import EditorPreference
    from tests.registry.test_browser import screenshot
    from tests.registry.test_browser_axe import serious_violations

    editor = make_user("Editors")
    EditorPreference.objects.create(user=editor, language=language)
    text = "# Release plan\n\n1. Stage it\n2. Ship it\n\n| Step | Who |\n|:-|-:|\n| stage | Ada |\n\n[Runbook](https://example.com)\n"
    resource = make_resource("docs://plan", text=text, mime_type="text/markdown")
    # axe sets inline styles while it measures, which the site's Content-Security-Policy refuses.
    page = chromium.new_context(viewport={"width": 1280, "height": 800}, color_scheme=scheme,
                                bypass_csp=True).new_page()
    page.set_default_timeout(15_000)
    log_in(page, live_server.url, editor.username)
    page.goto(f"{live_server.url}/admin/registry/resource/{resource.pk}/preview/")
    page.wait_for_selector("[data-registry-markdown] table")
    found = serious_violations(page, "saved-preview")
    screenshot(page, f"preview-markdown-{language}{'-dark' if scheme == 'dark' else ''}")
    page.goto(f"{live_server.url}/admin/registry/resource/{resource.pk}/change/")
    page.fill("#id_text", text.replace("Ship it", "Ship it on Monday"))
    page.click("[data-registry-preview-button]")
    page.wait_for_selector("[data-registry-preview-output] [data-registry-markdown] ol")
    assert "Ship it on Monday" in page.inner_text("[data-registry-preview-output] [data-registry-markdown]")
    found += serious_violations(page, "change-page-preview")
    assert found == [], "\n".join(found)
