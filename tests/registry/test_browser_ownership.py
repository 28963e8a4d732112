"""Folders and team ownership in a real browser (Chromium via Playwright, the harness of test_browser.py):
an editor outside the owning team opens an entry of an owned folder and finds it read-only with the
reason; a member of the team edits and saves it; the folder filter of the prompt list lists a folder
and its sub-folders only; the outsider's attempt is in the audit list, in words."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from registry.authoring import drafts
from registry.authoring.ownership import set_folder_owner
from registry.errors import FolderOwnershipDenied
from registry.models import Prompt
from tests.factories import make_prompt, make_user
from tests.registry.test_browser import chromium, csp_violations, log_in, log_out, screenshot  # noqa: F401  (fixture)


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_outsider_sees_an_owned_entry_read_only_a_member_edits_it_and_the_folder_filter_works(
        live_server, chromium):  # noqa: F811
    group = Group.objects.create(name="Support team")
    member, outsider = make_user("Editors"), make_user("Editors")
    member.groups.add(group)
    set_folder_owner("support", group, acting_user=None)
    owned = make_prompt(name="refund-reply", description="Answers a refund request", folder="support/billing")
    make_prompt(name="sales-pitch", description="Pitches the plan", folder="sales")
    make_prompt(name="faq-answer", description="Answers a question", folder="support")
    change_url = f"{live_server.url}/admin/registry/prompt/{owned.pk}/change/"
    page = chromium.new_context(viewport={"width": 1280, "height": 900}).new_page()
    page.set_default_timeout(15_000)
    violations = csp_violations(page)

    # The outsider: the entry opens read-only, and the page says whose folder it is and why.
    log_in(page, live_server.url, outsider.username)
    page.goto(change_url)
    warning = page.inner_text("ul.messagelist li.warning")
    assert "“support”" in warning and "“Support team”" in warning, warning
    assert page.locator("input[name=_save]").count() == 0
    assert page.locator("#id_description").count() == 0  # shown as text, not a field
    assert "Answers a refund request" in page.inner_text("#content")
    screenshot(page, "ownership-read-only")

    # The folder filter lists the folder and its sub-folders, nothing else.
    page.goto(f"{live_server.url}/admin/registry/prompt/")
    page.click("#changelist-filter a[href*='folder=support']:text-is('support')")
    page.wait_for_url("**folder=support*")
    listed = page.inner_text("#result_list")
    assert "refund-reply" in listed and "faq-answer" in listed and "sales-pitch" not in listed
    screenshot(page, "folder-filter")
    log_out(page)

    # A member of the team edits it and saves.
    log_in(page, live_server.url, member.username)
    page.goto(change_url)
    assert page.locator("ul.messagelist li.warning").count() == 0
    page.fill("#id_description", "Answers a refund request politely")
    page.click("input[name=_save]")
    page.wait_for_selector("ul.messagelist li.success")
    assert Prompt.objects.get(pk=owned.pk).description == "Answers a refund request politely"
    log_out(page)

    # The outsider's try from outside the admin is audited, and the audit list says so in words.
    with pytest.raises(FolderOwnershipDenied):
        drafts.save_draft(owned, {"description": "mine"}, acting_user=outsider)
    admin_user = make_user(None)
    log_in(page, live_server.url, admin_user.username)
    page.set_viewport_size({"width": 1700, "height": 900})  # the audit list's columns, the change among them
    page.goto(f"{live_server.url}/admin/registry/auditentry/?action__exact=refused")
    assert ("Refused: tried to change the draft in the folder “support” of the team “Support team”."
            in page.inner_text("#result_list"))
    screenshot(page, "audit-refused")
    assert violations == [], violations
