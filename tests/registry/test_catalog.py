import pytest

from registry.errors import InvalidArguments, InvalidUri, MissingArguments, UnknownPrompt, UnknownResource
from registry.models import PromptMessage
from registry.release import services
from registry.serving.catalogs import cached_catalog, catalog_for
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource, make_template

ANYONE = Viewer()


def publish(entry, labels=("production",)):
    return services.publish(entry, acting_user=None, note="test", labels=labels)


@pytest.mark.django_db
def test_lists_show_only_published_entries_sorted_by_key():
    publish(make_prompt("b-prompt", title="B"))
    publish(make_prompt("a-prompt"))
    make_prompt("draft-only")
    names = [p["name"] for p in catalog_for("production").prompts(ANYONE)]
    assert names == ["a-prompt", "b-prompt"]
    listed = catalog_for("production").prompts(ANYONE)[1]
    assert listed == {"name": "b-prompt", "title": "B", "description": "A prompt for tests",
                      "arguments": [{"name": "topic", "required": True}]}


@pytest.mark.django_db
def test_get_prompt_renders_the_version_production_points_at():
    prompt = make_prompt("greet")
    publish(prompt)
    PromptMessage.objects.filter(prompt=prompt).update(text="Draft text {{ topic }}")
    served = catalog_for("production").get_prompt(ANYONE, "greet", {"topic": "owls"})
    assert served.result["messages"][0]["content"]["text"] == "Tell me about owls."
    assert (served.kind, served.key, served.version, served.label) == ("prompt", "greet", 1, "production")


@pytest.mark.django_db
def test_staging_viewer_gets_staging_and_falls_back_to_production():
    prompt = make_prompt("greet")
    publish(prompt)
    PromptMessage.objects.filter(prompt=prompt).update(text="Staged {{ topic }}")
    publish(prompt, labels=("staging",))
    publish(make_prompt("other"))
    staging = Viewer(label="staging")
    staged = catalog_for("staging").get_prompt(staging, "greet", {"topic": "x"})
    assert staged.result["messages"][0]["content"]["text"] == "Staged x"
    assert catalog_for("production").get_prompt(ANYONE, "greet", {"topic": "x"}).version == 1
    assert catalog_for("staging").get_prompt(staging, "other", {"topic": "x"}).label == "production"


@pytest.mark.django_db
def test_scoped_viewer_sees_only_entries_with_its_tags():
    publish(make_prompt("billing-help", tags="billing"))
    publish(make_prompt("general"))
    scoped = Viewer(scope_tags=frozenset({"billing"}))
    catalog = catalog_for("production")
    assert [p["name"] for p in catalog.prompts(scoped)] == ["billing-help"]
    with pytest.raises(UnknownPrompt):
        catalog.get_prompt(scoped, "general", {"topic": "x"})


@pytest.mark.django_db
def test_scoped_visibility_follows_the_published_version_not_the_draft():
    prompt = make_prompt("billing-help", tags="billing")
    publish(prompt)
    scoped = Viewer(scope_tags=frozenset({"billing"}))
    prompt.tags = "internal"  # an editor retags the draft: nothing is served differently yet
    prompt.save()
    catalog = catalog_for("production")
    assert [p["name"] for p in catalog.prompts(scoped)] == ["billing-help"]
    assert catalog.prompts(Viewer(scope_tags=frozenset({"internal"}))) == []
    publish(prompt)  # the new tags take effect with the version that carries them
    from registry import changes

    changes.bump_generation()
    catalog = catalog_for("production")
    assert catalog.prompts(scoped) == []
    assert [p["name"] for p in catalog.prompts(Viewer(scope_tags=frozenset({"internal"})))] == ["billing-help"]


@pytest.mark.django_db
def test_tags_are_part_of_the_snapshot_and_its_content_hash():
    resource = make_resource("docs://tagged", tags="b, a")
    first = publish(resource)
    assert first.snapshot["tags"] == ["a", "b"]
    resource.tags = "a"
    resource.save()
    second = publish(resource)  # only the tags changed: still a new version
    assert second.snapshot["tags"] == ["a"] and second.content_hash != first.content_hash


@pytest.mark.django_db
def test_unknown_prompt_and_missing_arguments_are_domain_errors():
    publish(make_prompt("greet"))
    catalog = catalog_for("production")
    with pytest.raises(UnknownPrompt):
        catalog.get_prompt(ANYONE, "nope", {})
    with pytest.raises(MissingArguments):
        catalog.get_prompt(ANYONE, "greet", {})
    with pytest.raises(InvalidArguments):
        catalog.get_prompt(ANYONE, "greet", ["topic"])


@pytest.mark.django_db
def test_read_serves_direct_resources_before_templates():
    publish(make_resource("items://7", text="direct"))
    publish(make_template("items://{id}", body="templated {{ id }}"))
    catalog = catalog_for("production")
    assert catalog.read_resource(ANYONE, "items://7").result["contents"][0]["text"] == "direct"
    templated = catalog.read_resource(ANYONE, "items://8")
    assert templated.result == {"contents": [{"uri": "items://8", "mimeType": "text/plain", "text": "templated 8"}]}
    assert templated.kind == "template"


@pytest.mark.django_db
def test_binary_resource_is_served_as_base64_blob():
    publish(make_resource("docs://logo", text="", data=b"\x89PNG", mime_type="image/png"))
    content = catalog_for("production").read_resource(ANYONE, "docs://logo").result["contents"][0]
    assert content == {"uri": "docs://logo", "mimeType": "image/png", "blob": "iVBORw=="}


@pytest.mark.django_db
def test_unknown_and_invalid_uris_are_domain_errors():
    catalog = catalog_for("production")
    with pytest.raises(UnknownResource):
        catalog.read_resource(ANYONE, "docs://missing")
    with pytest.raises(InvalidUri):
        catalog.read_resource(ANYONE, "docs://a/../../etc")


@pytest.mark.django_db
def test_completion_offers_prefix_matched_suggestions():
    publish(make_prompt("greet", arguments=[{"name": "topic", "suggestions": "billing\nbilling-v2\nsearch"}]))
    result = catalog_for("production").complete(ANYONE, {"type": "ref/prompt", "name": "greet"}, "topic", "bi")
    assert result == {"values": ["billing", "billing-v2"], "total": 2, "hasMore": False}


@pytest.mark.django_db
def test_template_completion_adds_values_from_existing_resource_uris():
    publish(make_template("tickets://{id}", suggestions={"id": ["100", "200"]}))
    publish(make_resource("tickets://101"))
    result = catalog_for("production").complete(ANYONE, {"type": "ref/resource", "uri": "tickets://{id}"}, "id", "1")
    assert result["values"] == ["100", "101"]


@pytest.mark.django_db
def test_completion_is_capped_at_one_hundred_values():
    many = "\n".join(f"value-{i:03d}" for i in range(150))
    publish(make_prompt("greet", arguments=[{"name": "topic", "suggestions": many}]))
    result = catalog_for("production").complete(ANYONE, {"type": "ref/prompt", "name": "greet"}, "topic", "v")
    assert (len(result["values"]), result["total"], result["hasMore"]) == (100, 150, True)


@pytest.mark.django_db
def test_catalog_is_cached_until_a_change_commits(django_assert_num_queries):
    publish(make_prompt("greet"))
    first = catalog_for("production")
    with django_assert_num_queries(0):
        assert catalog_for("production") is first
    publish(make_prompt("second"))  # on_commit does not fire inside the test transaction...
    from registry import changes

    changes.bump_generation()  # ...so simulate the commit's announcement
    assert cached_catalog("production") is None
    assert [p["name"] for p in catalog_for("production").prompts(ANYONE)] == ["greet", "second"]


@pytest.mark.django_db
def test_archived_entries_are_not_served():
    resource = make_resource("docs://old")
    publish(resource)
    services.set_archived(resource, archived=True, acting_user=None)
    from registry import changes

    changes.bump_generation()
    with pytest.raises(UnknownResource):
        catalog_for("production").read_resource(ANYONE, "docs://old")
