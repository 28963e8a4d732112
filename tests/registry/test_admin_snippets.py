"""The snippet admin and what a reviewer of a snippet sees downstream.

A snippet has the pages every entry has (list, edit with its arguments, preview, compare, publish,
request, history); its change page and a resource's say who uses them; its review, compare and
publish pages list each entry following it on the label, with what its clients are served now and
after the release, the first 20 with a count beyond.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from registry.models import PRODUCTION, EditorPreference, Prompt, ReviewRequest, Snippet
from registry.release import reviews
from tests.factories import make_prompt, make_resource, make_snippet, release
from tests.registry.test_admin import client_for, url
from tests.registry.test_admin_list_queries import FILTERS

pytestmark = pytest.mark.django_db


def _includer(name: str, reference: str = "{{> house }}"):
    return make_prompt(name, messages=[{"role": "user", "kind": "text",
                                        "text": f"{reference} Tell me about {{{{ topic }}}}."}])


def _house_with_dependents(*names: str, pinned: str = "") -> Snippet:
    """Snippet 'house' v1 "Be kind." on production, each prompt of `names` following it (also on
    production), a prompt `pinned` pinning v1; the draft of the snippet then says "Be brief."."""
    house = make_snippet("house", text="Be kind.")
    release(house, note="v1")
    for name in names:
        release(_includer(name), note="uses house")
    if pinned:
        release(_includer(pinned, "{{> house@1 }}"), note="pins house")
    house.text = "Be brief."
    house.save()
    return house


def _changed_text(page: str) -> bool:
    """The dependent's message as the word diff shows it: "Be kind." before, "Be brief." after."""
    return "Be <del>kind</del><ins>brief</ins>. Tell me about" in page


# ------------------------------------------------------------------------------ the snippet admin


def test_a_snippet_is_edited_with_its_arguments_in_the_admin(client, editor):
    client_for(client, editor)
    response = client.post(url("snippet_add"), {
        "name": "tone-rules", "description": "", "folder": "", "tags": "", "text": "Write {{ tone }}.",
        "arguments-TOTAL_FORMS": "1", "arguments-INITIAL_FORMS": "0",
        "arguments-0-position": "1", "arguments-0-name": "tone", "arguments-0-type": "enum",
        "arguments-0-description": "How it sounds",
    })
    assert response.status_code == 302, response.context["adminform"].form.errors
    snippet = Snippet.objects.get(name="tone-rules")
    assert [(a.name, a.type, a.description) for a in snippet.arguments.all()] == [("tone", "enum", "How it sounds")]


def test_a_snippet_placeholder_without_its_argument_is_refused_at_save(client, editor):
    client_for(client, editor)
    response = client.post(url("snippet_add"), {
        "name": "tone-rules", "text": "Write {{ tone }}.", "folder": "", "tags": "",
        "arguments-TOTAL_FORMS": "0", "arguments-INITIAL_FORMS": "0",
    })
    assert response.status_code == 200
    assert "{{ tone }} is not a declared argument" in response.content.decode()
    assert not Snippet.objects.exists()


def test_the_snippet_pages_open(client, publisher):
    house = _house_with_dependents("greeting")
    client_for(client, publisher)
    for page in ("changelist", "change", "preview", "diff", "publish", "history", "request", "label"):
        args = () if page == "changelist" else (house.pk,)
        params = {"label": "staging", "version": "1"} if page == "label" else {}
        response = client.get(url(f"snippet_{page}", *args), params)
        assert response.status_code == 200, page
    assert "Be brief." in client.get(url("snippet_preview", house.pk)).content.decode()


def test_the_home_page_lists_snippets_with_the_other_kinds_to_write(client, editor):
    client_for(client, editor)
    page = client.get("/admin/").content.decode()
    assert url("snippet_changelist") in page


def test_the_snippet_change_list_runs_the_same_queries_for_5_rows_as_for_50_with_any_filter(client, editor):
    client_for(client, editor)

    def busy(index: int) -> None:
        folder = ("support/billing", "support", "")[index % 3]
        snippet = make_snippet(f"s-{index:03}", text=f"Part {{{{ topic }}}} {index}", arguments=[{"name": "topic"}],
                               tags="faq" if index % 2 else "other", folder=folder)
        release(snippet, note="v1")
        if index % 2:
            snippet.text = f"Part {{{{ topic }}}} changed {index}"
            snippet.save()
            release(snippet, note="v2", labels=("staging",))
        if index % 3 == 0:
            snippet.text = f"Part {{{{ topic }}}} again {index}"
            snippet.save()
            reviews.request_publication(snippet, acting_user=editor, note="please", label="staging")

    def queries(params: dict[str, str]) -> int:
        with CaptureQueriesContext(connection) as captured:
            response = client.get(url("snippet_changelist"), params)
        assert response.status_code == 200
        return len(captured)

    filters = [{}, *FILTERS]
    for index in range(5):
        busy(index)
    few = [queries(params) for params in filters]
    for index in range(5, 50):
        busy(index)
    page = client.get(url("snippet_changelist")).content.decode()
    assert "draft changed since v" in page and "in review #" in page
    assert [queries(params) for params in filters] == few


# ------------------------------------------------------------------------------------- used by


def test_the_snippet_page_says_which_entries_versions_and_labels_use_it(client, editor):
    house = _house_with_dependents("greeting", pinned="frozen")
    client_for(client, editor)
    page = client.get(url("snippet_change", house.pk)).content.decode()
    panel = page[page.index('id="registry-used-by"'):]
    for name in ("greeting", "frozen"):
        prompt = Prompt.objects.get(name=name)
        assert url("prompt_change", prompt.pk) in panel
    assert "pinned to v1" in panel
    assert "follows the label it is served from" in panel
    assert "production" in panel and "v1" in panel


def test_the_resource_page_says_which_prompts_embed_it(client, editor):
    guide = make_resource("docs://guide", text="Be kind.")
    release(guide)
    prompt = make_prompt("embedding", messages=[{"role": "user", "kind": "resource", "resource": guide}])
    release(prompt)
    client_for(client, editor)
    page = client.get(url("resource_change", guide.pk)).content.decode()
    panel = page[page.index('id="registry-used-by"'):]
    assert url("prompt_change", prompt.pk) in panel and "embedding" in panel


def test_an_unused_snippet_says_nothing_uses_it(client, editor):
    house = make_snippet("alone")
    client_for(client, editor)
    page = client.get(url("snippet_change", house.pk)).content.decode()
    assert "No published version of any entry uses it yet." in page


# ----------------------------------------------------------------------------------- downstream


def test_the_review_of_a_snippet_shows_each_dependent_served_now_and_after(client, editor, publisher):
    house = _house_with_dependents("greeting", "farewell", pinned="frozen")
    review = reviews.request_publication(house, acting_user=editor, note="shorter", label=PRODUCTION)
    client_for(client, publisher)
    page = client.get(url("reviewrequest_change", review.pk)).content.decode()
    panel = page[page.index('id="registry-downstream"'):]
    assert "greeting" in panel and "farewell" in panel
    assert "frozen" not in panel  # it pins v1: the release changes nothing it is served
    assert _changed_text(panel)


def test_the_review_of_a_published_snippet_version_shows_its_text_downstream(client, editor, publisher):
    house = _house_with_dependents("greeting")
    release(house, note="v2", labels=())
    review = reviews.request_publication(house, acting_user=editor, note="v2 please", label=PRODUCTION,
                                         version_number=2)
    client_for(client, publisher)
    panel = client.get(url("reviewrequest_change", review.pk)).content.decode()
    assert _changed_text(panel[panel.index('id="registry-downstream"'):])


def test_the_compare_and_publish_pages_of_a_snippet_show_the_dependents_diff(client, publisher):
    house = _house_with_dependents("greeting")
    client_for(client, publisher)
    for page in (client.get(url("snippet_diff", house.pk)), client.get(url("snippet_publish", house.pk))):
        text = page.content.decode()
        panel = text[text.index('id="registry-downstream"'):]
        assert "greeting" in panel and _changed_text(panel)


def _publish_page_with_a_staged_dependent(client, publisher, *names: str) -> str:
    """The publish page of 'house' (v1 on production, v2 "Be brief." on staging, the draft "Be
    loud."), prompts `names` following it on production and 'staged' on staging."""
    house = _house_with_dependents(*names)
    release(house, note="staging part", labels=("staging",))  # staging: "Be brief."
    house.text = "Be loud."
    house.save()
    release(_includer("staged"), labels=("staging",))
    client_for(client, publisher)
    return client.get(url("snippet_publish", house.pk)).content.decode()


def test_a_dependent_served_from_a_label_the_snippet_has_is_unchanged_by_a_production_release(client, publisher):
    text = _publish_page_with_a_staged_dependent(client, publisher)
    panel = text[text.index('id="registry-downstream"'):]
    assert "staged" in panel and "Be loud." not in panel  # it keeps the snippet's staging version


def test_the_publish_page_of_a_snippet_shows_the_dependents_on_each_label_it_has(client, publisher):
    text = _publish_page_with_a_staged_dependent(client, publisher, "greeting")
    production = text[text.index('id="registry-downstream"'):text.index('id="registry-downstream-staging"')]
    staging = text[text.index('id="registry-downstream-staging"'):]
    assert "greeting" in production and "Be <del>kind</del><ins>loud</ins>." in production
    assert "staged" in staging and "Be <del>brief</del><ins>loud</ins>." in staging  # what staging serves changes
    assert "Entries this changes on “staging”" in staging


def test_more_than_20_dependents_show_the_first_20_and_how_many_more(client, editor, publisher):
    house = _house_with_dependents(*[f"user-{i:02}" for i in range(23)])
    review = reviews.request_publication(house, acting_user=editor, note="shorter", label=PRODUCTION)
    client_for(client, publisher)
    page = client.get(url("reviewrequest_change", review.pk)).content.decode()
    panel = page[page.index('id="registry-downstream"'):]
    assert panel.count('class="registry-dependent"') == 20
    assert "user-19" in panel and "user-20" not in panel
    assert "And 3 more entries." in panel


def test_the_review_of_a_prompt_shows_no_downstream_list(client, editor, publisher):
    prompt = make_prompt("plain")
    review = reviews.request_publication(prompt, acting_user=editor, note="first", label=PRODUCTION)
    client_for(client, publisher)
    assert 'id="registry-downstream"' not in client.get(url("reviewrequest_change", review.pk)).content.decode()
    assert ReviewRequest.objects.count() == 1


@pytest.mark.parametrize(("language", "heading", "kind"), [("de", "Einträge, die sich dadurch auf „production“ ändern",
                                                            "Baustein-Versionen"),
                                                           ("zh-hans", "此更改在“production”上影响的条目", "片段版本")])
def test_the_downstream_list_speaks_the_readers_language(client, editor, publisher, language, heading, kind):
    house = _house_with_dependents("greeting")
    review = reviews.request_publication(house, acting_user=editor, note="shorter", label=PRODUCTION)
    EditorPreference.objects.create(user=publisher, language=language)
    client_for(client, publisher)
    assert heading in client.get(url("reviewrequest_change", review.pk)).content.decode()
    assert kind in client.get("/admin/registry/").content.decode()


# ------------------------------------------------------------------------- releasing in the admin


def test_a_snippet_is_published_moved_to_a_label_and_archived_from_the_admin(client, publisher):
    house = make_snippet("house", text="Be kind.")
    client_for(client, publisher)
    response = client.post(url("snippet_publish", house.pk), {"note": "first", "labels": ["staging"]})
    assert response.status_code == 302
    assert house.versions.get().number == 1
    response = client.post(url("snippet_label", house.pk), {"label": "canary", "version": "1", "note": "try"})
    assert response.status_code == 302
    assert sorted(house.labels.values_list("name", flat=True)) == ["canary", "staging"]
    response = client.post(url("snippet_changelist"), {"action": "archive_selected", "_selected_action": [house.pk]})
    assert response.status_code == 302
    house.refresh_from_db()
    assert house.archived_at is not None


def test_a_snippet_draft_is_restored_from_a_published_version(client, editor):
    house = _house_with_dependents()
    client_for(client, editor)
    assert client.get(url("snippet_restore", house.pk), {"version": "1"}).status_code == 200
    response = client.post(url("snippet_restore", house.pk), {"version": "1", "note": "back"})
    assert response.status_code == 302
    house.refresh_from_db()
    assert house.text == "Be kind."


def test_the_review_page_of_a_snippet_reads_a_fixed_number_of_queries_for_2_or_20_dependents(client, editor,
                                                                                             publisher):
    house = _house_with_dependents(*[f"user-{i:02}" for i in range(2)])
    review = reviews.request_publication(house, acting_user=editor, note="shorter", label=PRODUCTION)
    client_for(client, publisher)

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert client.get(url("reviewrequest_change", review.pk)).status_code == 200
        return len(captured)

    few = queries()
    for i in range(2, 20):
        release(_includer(f"user-{i:02}"), note="uses house")
    assert queries() == few


def test_comparing_a_snippet_version_with_production_shows_what_it_would_change_downstream(client, publisher):
    house = _house_with_dependents("greeting")
    release(house, note="v2", labels=("staging",))
    client_for(client, publisher)
    for b in ("v2", "label:staging"):
        text = client.get(url("snippet_diff", house.pk), {"a": "label:production", "b": b}).content.decode()
        assert _changed_text(text[text.index('id="registry-downstream"'):]), b
    text = client.get(url("snippet_diff", house.pk), {"a": "label:production", "b": "v1"}).content.decode()
    assert "Be <del>" not in text[text.index('id="registry-downstream"'):]  # v1 is what production serves


def test_a_resource_including_a_snippet_is_listed_downstream_with_its_text(client, editor, publisher):
    house = _house_with_dependents()
    release(make_resource("docs://style", text="{{> house }} Thanks."))
    review = reviews.request_publication(house, acting_user=editor, note="shorter", label=PRODUCTION)
    client_for(client, publisher)
    page = client.get(url("reviewrequest_change", review.pk)).content.decode()
    panel = page[page.index('id="registry-downstream"'):]
    assert "docs://style" in panel and "Be <del>kind</del><ins>brief</ins>. Thanks." in panel


def test_an_auditor_reads_a_snippet_and_its_arguments_with_positions_counted_from_1(client, auditor):
    house = make_snippet("house", text="Write {{ tone }}.", arguments=[{"name": "tone", "type": "enum"}])
    client_for(client, auditor)
    page = client.get(url("snippet_change", house.pk))
    assert page.status_code == 200
    text = page.content.decode()
    assert "Write {{ tone }}." in text and "field-shown_position" in text


def test_the_publish_page_shows_staging_followers_before_the_snippet_has_a_staging_label(client, publisher):
    house = _house_with_dependents()  # production only
    release(_includer("staged"), labels=("staging",))  # served from staging, falling back to production's house
    client_for(client, publisher)
    text = client.get(url("snippet_publish", house.pk)).content.decode()
    staging = text[text.index('id="registry-downstream-staging"'):]
    assert "staged" in staging and _changed_text(staging)  # publishing to staging gives it the draft


def test_archiving_a_snippet_in_use_from_the_list_says_why_and_archives_the_others(client, publisher):
    house = _house_with_dependents("reply")
    spare = make_snippet("spare", text="Unused.")
    client_for(client, publisher)
    response = client.post(url("snippet_changelist"), {"action": "archive_selected",
                                                        "_selected_action": [house.pk, spare.pk]}, follow=True)
    assert response.status_code == 200
    said = [str(m) for m in response.context["messages"]]
    assert any("house cannot be archived" in m and "prompt reply" in m for m in said), said
    assert Snippet.objects.get(pk=house.pk).archived_at is None
    assert Snippet.objects.get(pk=spare.pk).archived_at is not None
