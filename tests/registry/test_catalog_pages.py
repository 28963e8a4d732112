"""List pages read straight from the database answer exactly as the whole catalog does."""

import pytest
from django.utils import timezone

from registry import changes
from registry.models import Prompt, PromptMessage, Resource
from registry.release import rollouts, services
from registry.serving import catalogs
from registry.serving import pages as catalog_pages
from registry.serving.catalogs import load_catalog
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_template, make_user

PAGE = 3
VIEWERS = [Viewer(), Viewer(label="staging"), Viewer(scope_tags=frozenset({"billing"})),
           Viewer(label="staging", scope_tags=frozenset({"ops", "billing"}), client_id=7, client_name="c-7")]
VIEWERS += [Viewer(label="staging", client_id=i, client_name=f"client-{i}") for i in range(8)]


def publish(entry, labels=("production",)):
    return services.publish(entry, acting_user=None, note="test", labels=labels)


@pytest.fixture
def registry_mix(db):
    """Every rule the catalog applies: label fallback, a staging-only entry, an archived entry,
    scope tags, a draft renamed after publishing, a running rollout, a stored resource that
    hides a dynamic one."""
    for name in ("a-one", "b-two", "f-four", "k-five", "m-six"):
        publish(make_prompt(name))
    staged = make_prompt("c-staged")
    publish(staged)
    PromptMessage.objects.filter(prompt=staged).update(text="Staged {{ topic }}")
    Prompt.objects.filter(pk=staged.pk).update(description="staged description")
    publish(Prompt.objects.get(pk=staged.pk), labels=("staging",))
    publish(make_prompt("d-staging-only"), labels=("staging",))
    archived = make_prompt("e-archived")
    publish(archived)
    archived.archived_at = timezone.now()
    archived.save()
    publish(make_prompt("g-billing", tags="billing"))
    publish(make_prompt("h-ops", tags="ops"))
    renamed = make_prompt("i-served-name")
    publish(renamed)
    renamed.name = "zz-draft-name"  # the draft only: clients still see i-served-name
    renamed.save()
    rolled = make_prompt("j-rolled")
    publish(rolled, labels=("production", "staging"))
    Prompt.objects.filter(pk=rolled.pk).update(description="the candidate")
    publish(Prompt.objects.get(pk=rolled.pk), labels=())
    rollouts.set_rollout(rolled, label="staging", version_number=2, percent=50, acting_user=make_user(None))
    for i in range(7):
        publish(make_resource(f"docs://r-{i}", tags="billing" if i % 3 == 0 else ""))
    publish(make_resource("docs://s-staged"), labels=("staging",))
    publish(make_resource("registry://changes/recent", name="stored-recent"))
    publish(make_template("t://{id}"))
    publish(make_template("a://{id}", tags="ops"))


def _fresh_db_path() -> None:
    changes.bump_generation()  # no fresh catalog: every page comes from the database


def _db_pages(label, kind, lister, viewer):
    after, seen, personalised = None, [], set()
    while True:
        _fresh_db_path()
        part = catalog_pages.page_catalog(label, kind, viewer, after, PAGE + 1)
        assert part.partial
        personalised.add((part.personalised(viewer), part.variant(viewer)))
        listed = [item for item in getattr(part, lister)(viewer) if after is None or item[_KEY[kind]] > after]
        seen += listed[:PAGE]
        if len(listed) <= PAGE:
            return seen, personalised
        after = listed[PAGE - 1][_KEY[kind]]


_KEY = {"prompt": "name", "resource": "uri"}


@pytest.mark.parametrize("viewer", VIEWERS, ids=lambda v: f"{v.label}-{sorted(v.scope_tags)}-{v.client_name}")
@pytest.mark.parametrize("kind, lister", [("prompt", "prompts"), ("resource", "resources")])
def test_database_pages_list_what_the_catalog_lists(registry_mix, viewer, kind, lister):
    whole = load_catalog(viewer.label)
    expected = getattr(whole, lister)(viewer)
    pages, personalised = _db_pages(viewer.label, kind, lister, viewer)
    assert pages == expected
    assert personalised == {(whole.personalised(viewer), whole.variant(viewer))}


def test_the_mix_exercises_every_rule(registry_mix):
    """Guard for the comparison above: it really covers fallback, scope, rename and rollout."""
    staging = load_catalog("staging")
    names = [p["name"] for p in staging.prompts(Viewer(label="staging"))]
    assert "d-staging-only" in names and "i-served-name" in names and "e-archived" not in names
    assert any(staging.personalised(v) for v in VIEWERS) and not all(staging.personalised(v) for v in VIEWERS)
    assert "stored-recent" in [r["name"] for r in load_catalog("production").resources(Viewer())]


@pytest.mark.parametrize("viewer", VIEWERS[:4], ids=str)
def test_database_templates_list_what_the_catalog_lists(registry_mix, viewer):
    whole = load_catalog(viewer.label)
    _fresh_db_path()
    part = catalog_pages.page_catalog(viewer.label, "template", viewer, None, PAGE + 1)
    assert part.templates(viewer) == whole.templates(viewer)


def test_a_database_page_reads_only_its_entries(registry_mix, django_assert_max_num_queries):
    _fresh_db_path()
    with django_assert_max_num_queries(8):
        part = catalog_pages.page_catalog("production", "prompt", Viewer(), None, PAGE + 1)
    assert len(part.prompt_items) <= PAGE + 1 + 1  # the page, one more, and the rolled-out entry
    assert part.resource_items == {} and part.template_items == []
    assert catalogs.cached_catalog("production") is None  # a page catalog is never cached


def test_a_fresh_catalog_answers_pages_itself(registry_mix):
    whole = load_catalog("production")
    assert catalog_pages.page_catalog("production", "prompt", Viewer(), None, PAGE + 1) is whole


def test_scoped_scan_stops_once_the_page_is_full(db):
    for i in range(30):
        publish(make_prompt(f"p-{i:02d}", tags="billing" if i % 2 else "other"))
    ids = catalog_pages.first_visible("production", "prompt", Viewer(scope_tags=frozenset({"billing"})), "p-04", 3)
    assert [Prompt.objects.get(pk=i).name for i in ids] == ["p-05", "p-07", "p-09"]


def test_resource_keys_follow_the_listed_uri(db):
    publish(make_resource("docs://b"))
    publish(make_resource("docs://a"))
    renamed = Resource.objects.get(uri="docs://a")
    renamed.uri = "docs://z"  # a renamed draft is still served as docs://a
    renamed.save()
    _fresh_db_path()
    part = catalog_pages.page_catalog("production", "resource", Viewer(), None, 5)
    assert [r["uri"] for r in part.resources(Viewer()) if r["uri"].startswith("docs:")] == ["docs://a", "docs://b"]


def test_a_label_moved_back_to_a_version_of_another_name_is_paged_by_that_name(db):
    for name in ("b-prompt", "d-prompt"):
        publish(make_prompt(name))
    moving = make_prompt("a-first-name")
    publish(moving)
    moving.name = "z-second-name"
    moving.save()
    publish(moving)
    assert [p.name for p in _page_of("production")] == ["b-prompt", "d-prompt", "z-second-name"]
    services.move_label(moving, label="production", version_number=1, acting_user=make_user(None),
                        override_reason="test")
    assert [p.name for p in _page_of("production")] == ["a-first-name", "b-prompt", "d-prompt"]


def _page_of(label):
    _fresh_db_path()
    part = catalog_pages.page_catalog(label, "prompt", Viewer(label=label), None, 10)
    listed = [part.prompt_items[p["name"]] for p in part.prompts(Viewer(label=label))]
    assert [p.name for p in listed] == [p["name"] for p in load_catalog(label).prompts(Viewer(label=label))]
    return listed


def test_bulk_created_label_rows_are_paged_by_their_served_key(db):
    from registry.models import PromptLabel, PromptVersion

    versions = []
    for name in ("c-bulk", "a-bulk", "b-bulk"):
        publish(make_prompt(name))
        versions.append(PromptVersion.objects.get(entry__name=name))
    PromptLabel.objects.bulk_create([PromptLabel(entry=v.entry, version=v, name="canary") for v in versions])
    assert sorted(PromptLabel.objects.filter(name="canary").values_list("served_key", flat=True)) == [
        "a-bulk", "b-bulk", "c-bulk"]
    assert [p.name for p in _page_of("canary")] == ["a-bulk", "b-bulk", "c-bulk"]


def test_label_rows_without_a_served_key_are_paged_by_their_versions_listing(registry_mix):
    from django.db import connection

    from registry.models import PromptLabel

    with connection.cursor() as cursor:  # as if written around the model
        cursor.execute(f"UPDATE {PromptLabel._meta.db_table} SET served_key = ''")
    viewer = Viewer(label="staging")
    assert _db_pages("staging", "prompt", "prompts", viewer)[0] == load_catalog("staging").prompts(viewer)


@pytest.mark.parametrize("viewer", VIEWERS, ids=lambda v: f"{v.label}-{sorted(v.scope_tags)}-{v.client_name}")
def test_a_single_entry_catalog_renders_and_reads_what_the_catalog_does(registry_mix, viewer):
    whole = load_catalog(viewer.label)
    answered = 0
    for name in [*whole.prompt_items, "no-such-prompt"]:
        _fresh_db_path()
        part = catalog_pages.entry_catalog(viewer.label, "prompt", name, viewer)
        if part is None:  # the whole catalog answers: unknown, invisible, or asks about other entries
            continue
        assert part.partial and whole.personalised(viewer) == part.personalised(viewer)
        assert part.get_prompt(viewer, name, {"topic": "owls"}) == whole.get_prompt(viewer, name, {"topic": "owls"})
        answered += 1
    for uri in [*whole.resource_items, "DOCS://r-1", "t://7"]:
        _fresh_db_path()
        part = catalog_pages.entry_catalog(viewer.label, "resource", uri, viewer)
        if part is None:
            continue
        assert part.read_resource(viewer, uri) == whole.read_resource(viewer, uri)
        answered += 1
    listed_resources = [r["uri"] for r in whole.resources(viewer) if r["uri"] in whole.resource_items]
    assert answered == len(whole.prompts(viewer)) + len(listed_resources) + ("docs://r-1" in listed_resources)


def test_a_single_entry_catalog_is_not_used_for_what_it_cannot_answer(registry_mix):
    hidden = Viewer(scope_tags=frozenset({"ops"}))
    assert catalog_pages.entry_catalog("production", "prompt", "g-billing", hidden) is None  # not visible
    assert catalog_pages.entry_catalog("production", "prompt", "zz-draft-name", Viewer()) is None  # not served
    assert catalog_pages.entry_catalog("production", "resource", "t://7", Viewer()) is None  # a template's
    assert catalog_pages.entry_catalog("production", "resource", "not a uri", Viewer()) is None
    assert catalog_pages.entry_catalog("production", "prompt", "a-one", Viewer()).partial


def test_pages_follow_code_point_order_for_case_punctuation_and_encoded_uris(db):
    """Python sorts by code point; PostgreSQL's default collation ignores case and punctuation at
    first: every page must continue exactly where the whole catalog's list does (C order)."""
    from django.db import connection

    from registry.models import PromptLabel, ResourceLabel

    if connection.vendor == "postgresql":  # as on a database made with a natural-language collation
        with connection.cursor() as cursor:  # (DDL is transactional there: the test's rollback undoes it)
            for model in (PromptLabel, ResourceLabel):
                cursor.execute(f'ALTER TABLE {model._meta.db_table} ALTER COLUMN served_key '
                               f'TYPE varchar(2048) COLLATE "en-US-x-icu"')
    names = ["a-b", "ab", "a_c", "a.d", "Ab", "AB", "B", "a", "_x", "-y", "9", "10", "Z.z", "z-"]
    for name in names:
        publish(make_prompt(name))
    for uri in ["docs://x/caf%C3%A9", "docs://x/cafe", "docs://x/Cafe", "docs://x/caf_e", "docs://x/caf-e",
                "docs://x/%E4%B8%AD%E6%96%87", "docs://x/a/B", "docs://x/a/b", "docs://x/a-b", "docs://x/A"]:
        publish(make_resource(uri))
    for kind, lister in (("prompt", "prompts"), ("resource", "resources")):
        whole = load_catalog("production").__getattribute__(lister)(Viewer())
        assert [i[_KEY[kind]] for i in whole] == sorted(i[_KEY[kind]] for i in whole)
        assert _db_pages("production", kind, lister, Viewer())[0] == whole, kind


def test_on_postgresql_a_cold_page_is_read_in_key_order_from_an_index_not_sorted(db):
    """The page query orders by served_key COLLATE "C": without an index of that collation
    PostgreSQL sorts every label row of the label for each page (0018)."""
    from django.db import connection

    if connection.vendor != "postgresql":
        pytest.skip("SQLite's default (byte) collation is the page order: the model's index serves")
    for i in range(5):
        publish(make_prompt(f"p-{i}"))
        publish(make_resource(f"docs://r-{i}"))
    for kind in ("prompt", "resource"):
        rows = catalog_pages._served("production", kind).filter(sort_key__gt="a").order_by("sort_key", "entry_id")
        sql, params = rows[:4].values_list("entry_id", flat=True).query.sql_with_params()
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny test table: ask what a large one gets
            cursor.execute("SET LOCAL enable_sort = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
        assert "Sort" not in plan and "_by_c_key" in plan, plan
