"""A snippet's percentage rollout: its candidate is expanded inside every entry that follows the
snippet on the rolled-out label, for the clients whose bucket by the snippet's name is in the share
(each client in all of them or in none), lists stay shared, dependents are recorded and announced
to the clients whose text changes, the catalog stays consistent with the database, completing
moves the label and aborting returns everyone, and a rollout never crosses another."""

from __future__ import annotations

import pytest

from mcp_endpoint.notify.diff import PROMPTS_CHANGED, RESOURCE_UPDATED, diff_catalogs, notifications_for
from mcp_endpoint.notify.listeners import Listener
from registry import changes
from registry.changes import Change
from registry.errors import InvalidRollout
from registry.formats.buckets import gets_candidate
from registry.models import ChangeLogEntry, Prompt, PromptMessage, Rollout, Snippet
from registry.release import reviews
from registry.release.rollouts import set_rollout
from registry.serving.catalogs import load_catalog, read_entries, refresh_catalog
from registry.serving.consistency import served_fingerprint, stale_keys
from registry.serving.viewer import Viewer
from registry.storage.cache import cache
from tests.factories import make_prompt, make_resource, make_snippet, release

pytestmark = pytest.mark.django_db

CLIENTS = [Viewer(label="staging", client_id=i, client_name=f"client-{i}") for i in range(1, 41)]
INSIDE = [v for v in CLIENTS if gets_candidate(v.client_name, "style", 50)]
OUTSIDE = [v for v in CLIENTS if not gets_candidate(v.client_name, "style", 50)]


@pytest.fixture(autouse=True)
def _fresh_content_cache():
    cache.clear()
    yield
    cache.clear()


def fresh(label: str = "staging"):
    changes.bump_generation()
    return load_catalog(label)


def prompt_text(catalog, viewer: Viewer, name: str) -> str:
    return catalog.get_prompt(viewer, name, {"topic": "owls"}).result["messages"][0]["content"]["text"]


def resource_text(catalog, viewer: Viewer, uri: str) -> str:
    return catalog.read_resource(viewer, uri).result["contents"][0]["text"]


@pytest.fixture
def style(db):
    """Snippet 'style' v1 on staging, v2 published to no label; two prompts and a resource
    following it on staging, and a prompt pinning v1."""
    snippet = make_snippet("style", text="Be brief.")
    release(snippet, labels=("staging",))
    Snippet.objects.filter(pk=snippet.pk).update(text="Be warm.")
    release(Snippet.objects.get(pk=snippet.pk), labels=())
    for name, text in (("reply", "{{> style }} {{ topic }}"), ("other", "Other. {{> style }} {{ topic }}"),
                       ("pinned", "{{> style@1 }} {{ topic }}")):
        release(make_prompt(name, messages=[{"role": "user", "kind": "text", "text": text}]), labels=("staging",))
    release(make_resource("docs://guide", text="Guide. {{> style }}"), labels=("staging",))
    assert INSIDE and OUTSIDE
    return Snippet.objects.get(pk=snippet.pk)


def test_each_client_gets_the_candidate_in_every_dependent_or_in_none(style, publisher):
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    catalog = fresh()
    for viewer in INSIDE:
        assert prompt_text(catalog, viewer, "reply") == "Be warm. owls"
        assert prompt_text(catalog, viewer, "other") == "Other. Be warm. owls"
        assert resource_text(catalog, viewer, "docs://guide") == "Guide. Be warm."
    for viewer in OUTSIDE:
        assert prompt_text(catalog, viewer, "reply") == "Be brief. owls"
        assert resource_text(catalog, viewer, "docs://guide") == "Guide. Be brief."
    anonymous = Viewer(label="staging")
    assert prompt_text(catalog, anonymous, "reply") == "Be brief. owls"
    assert prompt_text(catalog, INSIDE[0], "pinned") == "Be brief. owls"  # pins v1: no rollout of it


def test_lists_stay_shared_while_reads_are_personalised(style, publisher):
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    catalog = fresh()
    viewer = INSIDE[0]
    assert catalog.personalised(viewer) and not catalog.personalised(viewer, texts=False)
    assert catalog.variant(viewer) and catalog.variant(OUTSIDE[0]) == ()
    assert catalog.prompts(viewer) == catalog.prompts(OUTSIDE[0])


def test_the_rollout_records_a_change_of_every_following_dependent(style, publisher):
    after = ChangeLogEntry.objects.order_by("-pk").values_list("pk", flat=True).first()
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    rows = set(ChangeLogEntry.objects.filter(pk__gt=after).values_list("entry_kind", "entry_key", "label"))
    assert {("prompt", "reply", "staging"), ("prompt", "other", "staging"),
            ("resource", "docs://guide", "staging"), ("snippet", "style", "staging")} <= rows
    assert ("prompt", "pinned", "staging") not in rows


def test_listeners_hear_of_it_only_where_their_text_changes(style, publisher):
    old = fresh()
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    new = fresh()
    batch = [Change(1, "snippet", "style", "staging", True), Change(2, "prompt", "reply", "staging", True),
             Change(3, "resource", "docs://guide", "staging", True)]
    diff = diff_catalogs(old, new, batch)

    def render(method, params):
        return (method, params)

    def heard(viewer):
        return notifications_for(Listener(viewer, render, uris={"docs://guide"}), diff, new)

    assert heard(INSIDE[0]) == [(PROMPTS_CHANGED, None), (RESOURCE_UPDATED, {"uri": "docs://guide"})]
    assert heard(OUTSIDE[0]) == []
    assert heard(Viewer(label="staging")) == []


def test_a_refresh_by_the_changed_keys_carries_the_rollout_as_a_full_build_does(style, publisher):
    base = fresh()
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    changes.bump_generation()
    refreshed = refresh_catalog("staging", [("snippet", "style"), ("prompt", "reply"), ("prompt", "other"),
                                            ("resource", "docs://guide")])
    assert refreshed is not base
    built = fresh()
    for catalog in (refreshed, built):
        assert prompt_text(catalog, INSIDE[0], "other") == "Other. Be warm. owls"
        assert catalog.snippet_rollouts == (("style", "staging", 2, 50),)
    changes.bump_generation()
    later = refresh_catalog("staging", [("prompt", "pinned")])  # an unrelated change keeps it
    assert prompt_text(later, INSIDE[0], "reply") == "Be warm. owls"


def test_the_catalog_agrees_with_the_database_while_it_runs_and_after_it_ends(style, publisher):
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    catalog = fresh()
    served = served_fingerprint("staging")
    assert served[("snippet-rollout", "style@staging")] == (2, "staging", (50, 2))
    assert stale_keys(catalog, served) == []
    Rollout.objects.filter(entry_kind="snippet").delete()  # ended behind the catalog's back
    assert ("snippet-rollout", "style@staging") in stale_keys(catalog, served_fingerprint("staging"))


def test_a_cold_part_serves_the_rollout_as_the_whole_catalog_does(style, publisher):
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    reply = Prompt.objects.get(name="reply")
    part = read_entries("staging", {"prompt": [reply.pk]})
    assert prompt_text(part, INSIDE[0], "reply") == "Be warm. owls"
    assert prompt_text(part, OUTSIDE[0], "reply") == "Be brief. owls"


def test_completing_moves_the_snippet_label_and_aborting_returns_everyone(style, publisher):
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    set_rollout(style, label="staging", version_number=2, percent=0, acting_user=publisher)
    catalog = fresh()
    assert catalog.snippet_rollouts == () and prompt_text(catalog, INSIDE[0], "reply") == "Be brief. owls"
    set_rollout(style, label="staging", version_number=2, percent=30, acting_user=publisher)
    set_rollout(style, label="staging", version_number=2, percent=100, acting_user=publisher)
    catalog = fresh()
    assert not Rollout.objects.exists()
    assert {prompt_text(catalog, v, "reply") for v in CLIENTS} == {"Be warm. owls"}


def test_a_snippet_rollout_is_refused_beside_a_dependents_own_rollout_and_the_other_way(style, publisher):
    reply = Prompt.objects.get(name="reply")
    PromptMessage.objects.filter(prompt=reply).update(text="{{> style }} again {{ topic }}")
    release(Prompt.objects.get(pk=reply.pk), labels=())
    set_rollout(reply, label="staging", version_number=2, percent=20, acting_user=publisher)
    with pytest.raises(InvalidRollout, match="prompt reply on 'staging'"):
        set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    set_rollout(reply, label="staging", version_number=2, percent=0, acting_user=publisher)
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    with pytest.raises(InvalidRollout, match="snippet style on 'staging'"):
        set_rollout(reply, label="staging", version_number=2, percent=20, acting_user=publisher)


def test_a_review_may_ask_for_a_snippet_rollout_and_its_approval_starts_it(style, editor, publisher):
    request = reviews.request_publication(style, acting_user=editor, note="try the warm style", label="staging",
                                          version_number=2, percent=25)
    reviews.approve(request, acting_user=publisher)
    rollout = Rollout.objects.get(entry_kind="snippet")
    assert (rollout.label, rollout.candidate_version, rollout.percent) == ("staging", 2, 25)


def test_the_admin_rollout_page_of_a_snippet_starts_one_and_shows_it(style, client, publisher):
    from tests.registry.test_admin import client_for, url

    client_for(client, publisher)
    page = client.get(url("snippet_rollout", style.pk), {"label": "staging", "version": "2"})
    assert page.status_code == 200, page.content[:500]
    done = client.post(url("snippet_rollout", style.pk), {"label": "staging", "version": "2", "percent": "40",
                                                          "note": "try it"}, follow=True)
    assert done.status_code == 200 and Rollout.objects.get(entry_kind="snippet").percent == 40
    assert "40" in client.get(url("snippet_rollout", style.pk)).content.decode()


def test_the_rollout_page_of_a_snippet_places_each_client_by_the_snippet_s_bucket(style, client, publisher):
    from registry.models import McpClient
    from tests.registry.test_admin import client_for, url

    for viewer in CLIENTS[:10]:
        McpClient.objects.create(name=viewer.client_name, label="staging", token_hash=f"{viewer.client_id:064d}")
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    client_for(client, publisher)
    page = client.get(url("snippet_rollout", style.pk))
    assert page.status_code == 200
    expected_new = sum(1 for viewer in CLIENTS[:10] if viewer in INSIDE)
    html = page.content.decode()
    assert f'class="registry-expected-new">{expected_new}<' in html
    assert "inside every entry that follows the snippet" in html
    assert "registry-observed-new" not in html  # a snippet's fetches are counted under its dependents


def test_the_consistency_check_repairs_a_snippet_rollout_ended_behind_the_catalogs_back(style, publisher):
    from registry.serving.consistency import repairs

    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    fresh()
    Rollout.objects.filter(entry_kind="snippet").delete()
    stale = stale_keys(load_catalog("staging"), served_fingerprint("staging"))
    assert repairs(stale) == [("snippet", "style")]
    changes.bump_generation()
    repaired = refresh_catalog("staging", repairs(stale))
    assert stale_keys(repaired, served_fingerprint("staging")) == []
    assert prompt_text(repaired, INSIDE[0], "reply") == "Be brief. owls"


def test_a_snippet_rollout_that_changes_a_protected_dependent_needs_its_review(style, publisher):
    from registry.errors import ApprovalRequired
    from registry.models import PromptLabel

    PromptLabel.objects.filter(entry__name="reply", name="staging").update(protected=True)
    with pytest.raises(ApprovalRequired):
        set_rollout(style, label="staging", version_number=2, percent=99, acting_user=publisher)
    assert not Rollout.objects.exists()
    set_rollout(style, label="staging", version_number=2, percent=99, acting_user=None, actor="release script")
    assert Rollout.objects.get().authority  # the command line's audited override


def test_an_entrys_rollout_whose_candidate_follows_a_rolling_snippet_is_refused(style, publisher):
    plain = make_prompt("plain", messages=[{"role": "user", "kind": "text", "text": "Plain {{ topic }}"}])
    release(plain, labels=("staging",))
    PromptMessage.objects.filter(prompt=plain).update(text="{{> style }} plain {{ topic }}")
    release(Prompt.objects.get(pk=plain.pk), labels=())
    set_rollout(style, label="staging", version_number=2, percent=50, acting_user=publisher)
    with pytest.raises(InvalidRollout, match="snippet style on 'staging'"):
        set_rollout(plain, label="staging", version_number=2, percent=99, acting_user=publisher)
