"""One rule of what a viewer is served (registry.serving.viewer.served_item), asked by every path.

A rollout candidate is served to a client in its bucket only if the candidate's own tags admit
that client, warm (the catalog), cold (pages read from the database while the catalog builds),
in the client page and in the notification hub; and every path gives the same answer."""

from __future__ import annotations

import contextlib
import itertools

import pytest

from mcp_endpoint.notify.diff import PROMPTS_CHANGED, Told, diff_catalogs, notifications_for
from mcp_endpoint.notify.listeners import Listener
from registry import changes
from registry.admin.fetch_stats import client_receives, rollout_progress
from registry.changes import Change
from registry.errors import UnknownPrompt, UnknownResource
from registry.formats.buckets import gets_candidate
from registry.models import Prompt, PromptMessage, Rollout
from registry.release import reviews
from registry.serving import pages as catalog_pages
from registry.serving.catalogs import load_catalog
from registry.serving.clients import create_client, viewer_of
from registry.serving.consistency import served_fingerprint, stale_keys
from registry.serving.viewer import Viewer, served_item
from tests.factories import make_prompt, make_resource, make_template, release

pytestmark = pytest.mark.django_db
SUPPORT, HR = frozenset({"support"}), frozenset({"hr"})


def client(name: str, scope: frozenset[str], label: str = "production") -> Viewer:
    return Viewer(label=label, scope_tags=scope, client_id=1, client_name=name)


def named(key: str, percent: int, inside: bool) -> str:
    return next(n for n in (f"agent-{i}" for i in range(1000)) if gets_candidate(n, key, percent) == inside)


def retag_and_roll_out(entry, editor, publisher, change_text) -> None:
    """v1 tagged support in production; v2 retagged hr, rolled out to 99% through an approved review."""
    entry.tags = "support"
    entry.save()
    release(entry, note="v1 for support")
    entry.tags = "hr"
    change_text(entry)
    entry.save()
    release(entry, note="v2 for hr", labels=())
    review = reviews.request_publication(entry, acting_user=editor, note="try v2", version_number=2, percent=99)
    reviews.approve(review, acting_user=publisher)


def cold() -> None:
    changes.bump_generation()  # no fresh catalog: list pages and single reads come from the database


def test_a_support_client_in_the_bucket_is_not_served_an_hr_only_prompt_warm_or_cold(editor, publisher):
    prompt = make_prompt("greet")

    def hr_text(entry):
        PromptMessage.objects.filter(prompt=entry).update(text="HR only: {{ topic }}")

    retag_and_roll_out(prompt, editor, publisher, hr_text)
    support_in, support_out = client(named("greet", 99, True), SUPPORT), client(named("greet", 99, False), SUPPORT)
    hr_in = client(named("greet", 99, True), HR)
    warm = load_catalog("production")
    assert warm.prompts(support_in) == []
    with pytest.raises(UnknownPrompt):
        warm.get_prompt(support_in, "greet", {"topic": "x"})
    assert warm.get_prompt(support_out, "greet", {"topic": "x"}).version == 1
    assert "HR only" in warm.get_prompt(hr_in, "greet", {"topic": "x"}).result["messages"][0]["content"]["text"]
    assert [row["key"] for row in warm.served_to(support_in)] == []
    cold()
    assert catalog_pages.page_catalog("production", "prompt", support_in, None, 5).prompts(support_in) == []
    assert catalog_pages.entry_catalog("production", "prompt", "greet", support_in) is None  # -> the whole catalog
    assert [p["name"] for p in catalog_pages.page_catalog("production", "prompt", hr_in, None, 5).prompts(hr_in)] == [
        "greet"]
    assert catalog_pages.entry_catalog("production", "prompt", "greet", hr_in).get_prompt(
        hr_in, "greet", {"topic": "x"}).version == 2


def test_a_support_client_in_the_bucket_reads_no_hr_only_resource_or_template(editor, publisher):
    resource = make_resource("docs://policy", text="for support")
    template = make_template("items://{id}", body="support item {{ id }}")

    def hr_resource(entry):
        entry.text = "HR only"

    def hr_template(entry):
        entry.body = "HR only item {{ id }}"

    retag_and_roll_out(resource, editor, publisher, hr_resource)
    retag_and_roll_out(template, editor, publisher, hr_template)
    name = next(n for n in (f"agent-{i}" for i in range(1000))
                if gets_candidate(n, "docs://policy", 99) and gets_candidate(n, "items://{id}", 99))
    support_in, hr_in = client(name, SUPPORT), client(name, HR)
    warm = load_catalog("production")
    assert all(r["uri"] != "docs://policy" for r in warm.resources(support_in))
    assert all(t.get("uriTemplate") != "items://{id}" for t in warm.templates(support_in))
    for uri in ("docs://policy", "items://7"):
        with pytest.raises(UnknownResource):
            warm.read_resource(support_in, uri)
        assert not warm.readable(support_in, uri)
    assert warm.read_resource(hr_in, "docs://policy").result["contents"][0]["text"] == "HR only"
    assert warm.read_resource(hr_in, "items://7").result["contents"][0]["text"] == "HR only item 7"
    cold()
    page = catalog_pages.page_catalog("production", "resource", support_in, None, 5)
    assert all(r["uri"] != "docs://policy" for r in page.resources(support_in))
    assert catalog_pages.entry_catalog("production", "resource", "docs://policy", support_in) is None
    page = catalog_pages.page_catalog("production", "resource", hr_in, None, 5)
    assert "docs://policy" in [r["uri"] for r in page.resources(hr_in)]


def test_the_hub_judges_the_item_actually_served(editor, publisher):
    prompt = make_prompt("greet")
    prompt.tags = "support"
    prompt.save()
    release(prompt, note="v1 for support")
    before = Told.of(load_catalog("production"))
    prompt.tags = "hr"
    prompt.save()
    release(prompt, note="v2 for hr", labels=())
    review = reviews.request_publication(prompt, acting_user=editor, note="try v2", version_number=2, percent=99)
    reviews.approve(review, acting_user=publisher)
    cold()
    after = load_catalog("production")
    diff = diff_catalogs(before, after, [Change(1, "prompt", "greet", "production", True)])

    def hears(viewer):
        return notifications_for(Listener(viewer, lambda m, p: (m, p)), diff, after)

    inside, outside = named("greet", 99, True), named("greet", 99, False)
    assert hears(client(inside, SUPPORT)) == [(PROMPTS_CHANGED, None)]  # greet is gone for it
    assert hears(client(inside, HR)) == [(PROMPTS_CHANGED, None)]  # greet appeared for it
    assert hears(client(outside, SUPPORT)) == []  # still v1
    assert hears(client(outside, HR)) == []  # still nothing


# ------------------------------------------------------------------------------- the grid
# Every combination of label, rollout and tags is answered alike by the warm catalog, the cold
# single read, the cold list page and the hub; a second copy of the rule drifting fails here.

GRID_TAGS = ("support", "hr", "")


def _grid_registry(editor, publisher):
    """Prompts p-<v1 tags>-<v2 tags>-<rollout>: production serves v1; v2 runs at 50% on
    production, is staged (staging serves v2), or is not released."""
    for number, (first, second, how) in enumerate(itertools.product(GRID_TAGS, GRID_TAGS, ("rollout", "staged",
                                                                                          "none"))):
        prompt = make_prompt(f"p{number:02d}-{first or 'all'}-{second or 'all'}-{how}")
        prompt.tags = first
        prompt.save()
        release(prompt, note="v1")
        prompt.tags = second
        prompt.save()
        PromptMessage.objects.filter(prompt=prompt).update(text="v2 {{ topic }}")
        release(prompt, note="v2", labels=("staging",) if how == "staged" else ())
        if how == "rollout":
            review = reviews.request_publication(prompt, acting_user=editor, note="half", version_number=2,
                                                 percent=50)
            reviews.approve(review, acting_user=publisher)
        prompt.name = f"draft-{number:02d}"  # renamed since: clients are served (and bucketed) by the old name
        prompt.save()


def _warm(viewer):
    catalog = load_catalog(viewer.label)
    out = {}
    for name in catalog.prompt_items:
        with contextlib.suppress(UnknownPrompt):
            out[name] = catalog.get_prompt(viewer, name, {"topic": "x"}).version
    listed = {p["name"] for p in catalog.prompts(viewer)}
    assert listed == set(out)
    return out


def _cold(viewer):
    out = {}
    names = sorted(load_catalog(viewer.label).prompt_items)
    cold()
    for name in names:
        part = catalog_pages.entry_catalog(viewer.label, "prompt", name, viewer)
        if part is not None:
            out[name] = part.get_prompt(viewer, name, {"topic": "x"}).version
    paged, after = [], None
    while True:  # pages of two, each read as a list request reads it (two and one more, after the cursor)
        page = catalog_pages.page_catalog(viewer.label, "prompt", viewer, after, 3)
        listed = [p["name"] for p in page.prompts(viewer) if after is None or p["name"] > after][:3]
        paged += listed[:2]
        if len(listed) < 3:
            break
        after = listed[1]
    assert paged == sorted(out)
    return out


def _hub(viewer):
    catalog = load_catalog(viewer.label)
    return {key: served.version for key, item in catalog.prompt_items.items()
            if (served := served_item(item, viewer)) is not None}


def test_warm_cold_and_hub_serve_every_viewer_the_same_versions(editor, publisher):
    _grid_registry(editor, publisher)
    names = [f"agent-{i}" for i in range(3)] + [""]  # at 50%, each prompt has clients in and out of its bucket
    for label, scope, name in itertools.product(("production", "staging"), (frozenset(), SUPPORT, HR), names):
        viewer = Viewer(label=label, scope_tags=scope, client_id=1 if name else None, client_name=name)
        warm, cold_answer, hub_answer = _warm(viewer), _cold(viewer), _hub(viewer)
        assert warm == cold_answer == hub_answer, (viewer, warm, cold_answer, hub_answer)
        empty = Told(label, {}, {}, {})
        notes = notifications_for(Listener(viewer, lambda m, p: (m, p)),
                                  diff_catalogs(empty, load_catalog(label), [Change(1, "prompt", "*", label, True)]),
                                  load_catalog(label))
        assert (notes == [(PROMPTS_CHANGED, None)]) == bool(warm)


def test_the_admin_pages_and_the_consistency_check_answer_the_grid_as_the_catalog_serves_it(editor, publisher):
    """The client page (what a client receives now), the rollout page (which clients get the
    candidate) and the consistency check (which rollout runs on which served item) say what the
    warm catalog serves, for every client of the grid."""
    _grid_registry(editor, publisher)
    clients = [create_client(name=f"{label}-{tags or 'all'}-{i}", label=label, scope_tags=tags)[0]
               for label in ("production", "staging") for tags in ("", "support", "hr") for i in range(3)]
    served = {client.name: _warm(viewer_of(client)) for client in clients}
    for client in clients:
        assert {row["key"]: row["version"] for row in client_receives(client)
                if row["kind"] == "prompt"} == served[client.name], client.name
    rolled = Rollout.objects.filter(entry_kind="prompt").order_by("entry_id")
    assert rolled.count() == len(GRID_TAGS) ** 2
    for rollout in rolled:
        prompt = Prompt.objects.get(pk=rollout.entry_id)
        key = next(k for k in load_catalog("production").prompt_items if k.startswith(f"p{prompt.name[-2:]}-"))
        progress = rollout_progress(prompt, rollout)
        expected = {row["name"]: row["candidate"] for row in progress["expected"]}
        assert expected == {name: got[key] == 2 for name, got in served.items() if key in got}, key
    for label in ("production", "staging"):
        assert stale_keys(load_catalog(label), served_fingerprint(label)) == []


def _rolled_out_greet(editor, publisher, *, first_tags: str = "", second_tags: str = "") -> Prompt:
    prompt = make_prompt("greet", tags=first_tags)
    release(prompt, note="v1")
    prompt.tags = second_tags
    prompt.save()
    PromptMessage.objects.filter(prompt=prompt).update(text="v2 {{ topic }}")
    release(prompt, note="v2", labels=())
    review = reviews.request_publication(prompt, acting_user=editor, note="half", version_number=2, percent=50)
    reviews.approve(review, acting_user=publisher)
    return prompt


def _candidates(prompt) -> dict[str, bool]:
    progress = rollout_progress(prompt, Rollout.objects.get(entry_id=prompt.pk))
    return {row["name"]: row["candidate"] for row in progress["expected"]}


def _gets_v2(names) -> dict[str, bool]:
    catalog = load_catalog("production")
    out = {}
    for name in names:
        with contextlib.suppress(UnknownPrompt):
            out[name.name] = catalog.get_prompt(viewer_of(name), "greet", {"topic": "x"}).version == 2
    return out


def test_the_rollout_page_buckets_clients_by_the_name_served_not_the_renamed_draft(editor, publisher):
    """It used to bucket by the draft's key: after a rename, half its 'gets the candidate' were wrong."""
    prompt = _rolled_out_greet(editor, publisher)
    prompt.name = "greeting"  # the draft only: production still serves greet, v1 and (in the bucket) v2
    prompt.save()
    clients = [create_client(name=f"agent-{i}")[0] for i in range(20)]
    assert _candidates(prompt) == _gets_v2(clients)
    assert 0 < sum(_candidates(prompt).values()) < 20


def test_the_rollout_page_counts_a_client_by_the_tags_of_the_version_it_would_get(editor, publisher):
    """It used to judge every client by the label version's tags: an hr client in the bucket of an
    hr-only candidate was left out, a support client in it was counted as getting the candidate
    it is never served."""
    prompt = _rolled_out_greet(editor, publisher, first_tags="support", second_tags="hr")
    support = [create_client(name=f"support-{i}", scope_tags="support")[0] for i in range(10)]
    hr = [create_client(name=f"hr-{i}", scope_tags="hr")[0] for i in range(10)]
    expected = _candidates(prompt)
    assert expected == _gets_v2(support + hr)
    assert all(expected[c.name] for c in hr if c.name in expected)
    assert not any(expected[c.name] for c in support if c.name in expected)
    assert any(c.name in expected for c in hr)
