"""The admin tells what is true now: a rollback after an approval, what the History page may do."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from registry.release import reviews, services
from tests.factories import make_prompt, release
from tests.registry.test_admin import client_for, edit_first_message, url

pytestmark = pytest.mark.django_db


def _approved_then_rolled_back(editor, publisher, second_publisher):
    """v1 on production; the editor's request for v2 approved; then an incident rollback to v1."""
    prompt = make_prompt("refunds")
    release(prompt, note="v1")
    edit_first_message(prompt, "Second take on {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="new wording", label="production")
    reviews.approve(review, acting_user=second_publisher)
    services.rollback(prompt, acting_user=publisher, note="v2 gives wrong refund amounts", to_version=1)
    return prompt, review


# ------------------------------------------------------------------------------ told of a rollback


def test_the_requesters_home_says_their_approved_release_was_rolled_back_and_why(client, editor, publisher,
                                                                                 second_publisher):
    _prompt, review = _approved_then_rolled_back(editor, publisher, second_publisher)
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    row = page[page.index(f"#{review.pk}</a>"):]
    row = row[:row.index("</tr>")]
    assert "v2 is served" not in row
    assert f"approved by {second_publisher.username}: v2 was served" in row
    assert f"“production” serves v1 now: {publisher.username} rolled it back from v2" in row
    assert "(an incident rollback)" in row and "because: “v2 gives wrong refund amounts”" in row


def test_the_requesters_home_still_says_served_while_nothing_moved(client, editor, second_publisher):
    prompt = make_prompt("steady")
    release(prompt, note="v1")
    edit_first_message(prompt, "Second take on {{ topic }}.")
    review = reviews.request_publication(prompt, acting_user=editor, note="new wording", label="production")
    reviews.approve(review, acting_user=second_publisher)
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    assert f"approved by {second_publisher.username}: v2 is served" in page
    assert "rolled it back" not in page


def test_the_entry_page_says_what_is_served_after_a_rollback_and_why(client, editor, publisher, second_publisher):
    prompt, _review = _approved_then_rolled_back(editor, publisher, second_publisher)
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert 'class="registry-warning registry-rolled-back"' in page
    assert f"“production” serves v1 now: {publisher.username} rolled it back from v2" in page
    assert "because: “v2 gives wrong refund amounts”" in page


def test_the_entry_page_says_nothing_of_rollbacks_once_the_label_moved_on(client, editor, publisher,
                                                                           second_publisher):
    prompt, _review = _approved_then_rolled_back(editor, publisher, second_publisher)
    edit_first_message(prompt, "Third take on {{ topic }}.")
    release(prompt, note="v3 fixed")
    page = client_for(client, editor).get(url("prompt_change", prompt.pk)).content.decode()
    assert "registry-rolled-back" not in page


@pytest.mark.parametrize(("language", "expected"), [
    ("de", "„production“ stellt jetzt v1 bereit"), ("zh-hans", "“production”现在提供 v1")])
def test_the_rollback_is_told_in_the_editors_language(client, editor, publisher, second_publisher, language,
                                                      expected):
    from registry.models import EditorPreference

    _approved_then_rolled_back(editor, publisher, second_publisher)
    EditorPreference.objects.create(user=editor, language=language)
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    assert expected in page


# ------------------------------------------------------------------------------ History offers what is allowed


def _history_rows(client, user, prompt) -> dict[int, str]:
    page = client_for(client, user).get(url("prompt_history", prompt.pk)).content.decode()
    rows = page.split('<tr class="registry-version">')[1:]
    return {int(re.search(r"<td[^>]*>v(\d+)<", row).group(1)): row.split("</tr>", 1)[0] for row in rows}


def _staging_ahead():
    """v1 on production (protected) and staging, v2 on staging only."""
    prompt = make_prompt("offers")
    release(prompt, note="v1", labels=("production", "staging"))
    edit_first_message(prompt, "Second take on {{ topic }}.")
    release(prompt, note="v2", labels=("staging",))
    return prompt


def test_history_offers_no_one_click_rollout_on_a_protected_label_but_a_review_request(client, publisher):
    prompt = _staging_ahead()
    rows = _history_rows(client, publisher, prompt)
    assert 'option value="production"' not in rows[2]
    assert "“production” is protected: rolling this version out on it needs a review" in rows[2]
    request_link = f'{url("prompt_request", prompt.pk)}?label=production&amp;version=2&amp;percent=10'
    assert request_link in rows[2]
    assert 'option value="staging"' in rows[1]  # staging is not protected: offered, and done when asked
    assert "needs a review" not in rows[1]
    from registry.release import rollouts

    client.post(url("prompt_rollout", prompt.pk), {"label": "staging", "version": 1, "percent": 10, "note": ""})
    assert rollouts.rollout_of(prompt, "staging").percent == 10


def test_the_review_link_opens_a_request_for_that_version_label_and_share(client, publisher):
    prompt = _staging_ahead()
    page = client_for(client, publisher).get(url("prompt_request", prompt.pk),
                                             {"label": "production", "version": 2, "percent": 10})
    form = page.context["form"]
    assert (form.initial["label"], form.initial["percent"]) == ("production", "10")
    assert page.context["version"].number == 2


def test_history_offers_the_one_click_rollout_an_approval_already_covers(client, editor, publisher,
                                                                         second_publisher):
    from registry.release import rollouts

    prompt = _staging_ahead()
    review = reviews.request_publication(prompt, acting_user=editor, note="try", label="production",
                                         version_number=2, percent=10)
    reviews.approve(review, acting_user=second_publisher)
    assert rollouts.rollout_of(prompt, "production").candidate_version == 2
    rows = _history_rows(client, publisher, prompt)
    assert 'option value="production"' in rows[2] and "needs a review" not in rows[2]
    done = client.post(url("prompt_rollout", prompt.pk), {"label": "production", "version": 2, "percent": 50,
                                                          "note": ""}, follow=True)
    assert rollouts.rollout_of(prompt, "production").percent == 50, done.content.decode()[:300]


# ------------------------------------------------------------------------------ "As my browser asks"


@pytest.mark.parametrize(("browser", "confirmation", "html_lang"), [
    ("zh-Hans,zh;q=0.9", "管理后台现在使用简体中文。", "zh-hans"),
    ("en-GB,en;q=0.8", "The admin now speaks English to you.", "en"),
])
def test_as_my_browser_asks_confirms_in_the_language_the_next_page_speaks(client, editor, browser, confirmation,
                                                                          html_lang):
    from django.conf import settings

    from registry.models import EditorPreference

    EditorPreference.objects.create(user=editor, language="de")
    client_for(client, editor)
    client.cookies[settings.LANGUAGE_COOKIE_NAME] = "de"  # the old choice, as the browser still sends it
    done = client.post("/admin/language/", {"language": ""}, follow=True, HTTP_ACCEPT_LANGUAGE=browser)
    page = done.content.decode()
    assert f'<html lang="{html_lang}"' in page
    assert confirmation in page
    assert "Der Admin spricht jetzt" not in page


# ------------------------------------------------------------------------------ the home page by task


def _section(page: str, start: str, end: str) -> str:
    return page[page.index(start):page.index(end, page.index(start))]


@pytest.mark.parametrize("role", ["publisher", "auditor"])
def test_the_home_page_groups_the_tables_by_task_and_hides_the_internal_ones_behind_one_link(client, role,
                                                                                            request):
    user = request.getfixturevalue(role)
    page = client_for(client, user).get(reverse("admin:index")).content.decode()
    main = _section(page, 'id="content-main"', 'id="registry-internal-tables"')
    assert "<caption>Write</caption>" in main and "<caption>Audit</caption>" in main
    write = _section(main, "registry-task-write", "</table>")
    assert [name in write for name in (">Prompts<", ">Resources<", ">Resource templates<")] == [True] * 3
    for internal in ("Prompt labels", "Resource template versions", "Fetch counters", "Webhook deliveries"):
        assert f">{internal}<" not in main
    hidden = _section(page, 'id="registry-internal-tables"', "</details>")
    assert "<summary>Internal tables (" in hidden
    for internal in ("Prompt labels", "Resource template versions", "Fetch counters"):
        assert f">{internal}<" in hidden  # out of the way, still reachable
    assert ">View site<" not in page


def test_an_editor_sees_the_write_and_review_tasks_first(client, editor):
    page = client_for(client, editor).get(reverse("admin:index")).content.decode()
    main = page[page.index('id="content-main"'):]
    assert main.index("<caption>Write</caption>") < main.index("<caption>Review and release</caption>")
    assert "<caption>Audit</caption>" not in main  # editors may not read the audit log


@pytest.mark.parametrize(("language", "write", "internal"), [
    ("de", "<caption>Schreiben</caption>", "Interne Tabellen"), ("zh-hans", "<caption>撰写</caption>", "内部数据表")])
def test_the_task_groups_speak_the_users_language(client, publisher, language, write, internal):
    from registry.models import EditorPreference

    EditorPreference.objects.create(user=publisher, language=language)
    page = client_for(client, publisher).get(reverse("admin:index")).content.decode()
    assert write in page and internal in page


@pytest.mark.parametrize(("language", "expected"), [
    ("de", "„production“ ist geschützt"), ("zh-hans", "“production”受保护")])
def test_the_history_says_a_review_is_needed_in_the_publishers_language(client, publisher, language, expected):
    from registry.models import EditorPreference

    prompt = _staging_ahead()
    EditorPreference.objects.create(user=publisher, language=language)
    assert expected in _history_rows(client, publisher, prompt)[2]
