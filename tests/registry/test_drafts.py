from __future__ import annotations

import pytest

from registry.authoring.drafts import (
    apply_prompt,
    apply_snapshot,
    apply_template,
    draft_data,
    restore_draft,
    save_draft,
)
from registry.authoring.snapshots import snapshot_of
from registry.models import AuditAction, AuditEntry, ChangeLogEntry, PromptMessage, Resource
from registry.release import services
from tests.factories import PNG_1X1, make_prompt, make_resource, make_template

pytestmark = pytest.mark.django_db


def test_apply_prompt_replaces_arguments_and_messages_in_order():
    prompt = make_prompt("greet")
    apply_prompt(prompt, {
        "title": "Greeting",
        "arguments": [{"name": "who", "required": True, "suggestions": ["world", "team"]},
                      {"name": "mood", "required": False, "default": "happy"}],
        "messages": [{"role": "user", "kind": "text", "text": "Hello {{ who }}"},
                     {"role": "assistant", "kind": "text", "text": "I am {{ mood }}"}],
    })
    prompt.refresh_from_db()
    assert prompt.title == "Greeting"
    assert [a.name for a in prompt.arguments.all()] == ["who", "mood"]
    assert prompt.arguments.get(name="who").suggestion_list == ["world", "team"]
    assert [(m.role, m.text) for m in prompt.messages.all()] == [("user", "Hello {{ who }}"),
                                                                 ("assistant", "I am {{ mood }}")]


def test_apply_prompt_leaves_fields_that_are_not_given_alone():
    prompt = make_prompt("keep", description="Kept", tags="a, b")
    apply_prompt(prompt, {"title": "New title"})
    prompt.refresh_from_db()
    assert prompt.description == "Kept"
    assert prompt.tag_set == {"a", "b"}
    assert prompt.messages.count() == 1


def test_apply_snapshot_restores_a_published_version_exactly():
    style = make_resource("docs://style", text="Be brief.")
    services.publish(style, acting_user=None, note="v1")
    prompt = make_prompt("rich", arguments=[{"name": "topic", "required": True, "suggestions": "a\nb"}], messages=[
        {"role": "user", "kind": "text", "text": "About {{ topic }}"},
        {"role": "user", "kind": "image", "mime_type": "image/png", "data": PNG_1X1},
        {"role": "user", "kind": "resource", "resource": style},
        {"role": "assistant", "kind": "resource_link", "uri": "https://example.com/spec", "link_name": "spec"},
    ])
    version = services.publish(prompt, acting_user=None, note="v1")
    apply_prompt(prompt, {"arguments": [], "messages": [{"role": "user", "kind": "text", "text": "changed"}]})
    assert snapshot_of(prompt) != version.snapshot

    apply_snapshot(prompt, version.snapshot)

    assert snapshot_of(prompt) == version.snapshot
    image = prompt.messages.get(kind="image")
    assert bytes(image.data) == PNG_1X1
    assert prompt.messages.get(kind="resource").resource == style  # linked again, not copied inline


def test_apply_snapshot_restores_binary_resources_and_templates():
    blob = make_resource("docs://blob", text="", data=PNG_1X1, mime_type="image/png")
    blob_version = services.publish(blob, acting_user=None, note="v1")
    template = make_template("tickets://{project}/{id}", body="Ticket {{ id }}", suggestions={"project": ["web"]})
    template_version = services.publish(template, acting_user=None, note="v1")
    blob.data = b"other"
    blob.save()
    apply_template(template, {"body": "x", "variables": []})

    apply_snapshot(blob, blob_version.snapshot)
    apply_snapshot(template, template_version.snapshot)

    assert snapshot_of(blob) == blob_version.snapshot
    assert snapshot_of(template) == template_version.snapshot


def test_restore_draft_audits_the_restore():
    prompt = make_prompt("restorable")
    services.publish(prompt, acting_user=None, note="v1")
    apply_prompt(prompt, {"description": "Edited"})

    restore_draft(prompt, 1, acting_user=None, note="back to v1")

    audit = AuditEntry.objects.get(action=AuditAction.RESTORE_DRAFT)
    assert audit.from_version == 1
    assert audit.changes == [{"field": "description", "before": "Edited", "after": "A prompt for tests"}]


def test_save_draft_audits_a_tag_change_with_the_field_diff():
    resource = make_resource("docs://tagged", title="Docs", tags="ops")

    changes = save_draft(resource, {"title": "Ops", "tags": ["ops", "writing"]}, acting_user=None, actor="tool",
                         note="retag")

    audit = AuditEntry.objects.get(action=AuditAction.EDIT)
    assert changes == audit.changes == [{"field": "tags", "before": ["ops"], "after": ["ops", "writing"]},
                                        {"field": "title", "before": "Docs", "after": "Ops"}]
    assert (audit.actor_name, audit.note) == ("tool", "retag")


def test_a_new_entry_s_tags_are_part_of_its_create_row():
    save_draft(Resource(), {"uri": "docs://new", "name": "new", "text": "Hi", "tags": ["b", "a"]}, acting_user=None)

    created = AuditEntry.objects.get(action="create")
    assert {"field": "tags", "before": None, "after": ["a", "b"]} in created.changes


def test_a_draft_tag_edit_announces_nothing(django_capture_on_commit_callbacks):
    resource = make_resource("docs://tagged", tags="ops")
    services.publish(resource, acting_user=None, note="v1")
    before = ChangeLogEntry.objects.count()
    with django_capture_on_commit_callbacks(execute=True):
        save_draft(resource, {"tags": ["ops", "finance"]}, acting_user=None)
    assert ChangeLogEntry.objects.count() == before  # drafts serve nothing; the publish will tell


def test_restoring_a_draft_from_a_version_restores_its_tags():
    resource = make_resource("docs://tagged", tags="ops")
    services.publish(resource, acting_user=None, note="v1")
    save_draft(resource, {"tags": ["finance"]}, acting_user=None)
    restore_draft(resource, 1, acting_user=None)
    resource.refresh_from_db()
    assert resource.tags == "ops"


def test_draft_data_ignores_stale_inline_fields_of_linked_messages():
    style = make_resource("docs://style", text="Be brief.")
    prompt = make_prompt("linked", messages=[{"role": "user", "kind": "resource", "resource": style}])
    before = draft_data(prompt)
    PromptMessage.objects.filter(prompt=prompt).update(uri="docs://stale", text="stale")
    assert draft_data(prompt) == before
    assert before["messages"] == [{"role": "user", "kind": "resource", "resource_uri": "docs://style"}]


def test_apply_snapshot_restores_links_to_registry_resources():
    spec = make_resource("docs://spec", text="Spec", title="The spec", description="What we build")
    prompt = make_prompt("linker", messages=[
        {"role": "user", "kind": "text", "text": "Read {{ topic }}"},
        {"role": "assistant", "kind": "resource_link", "resource": spec, "link_name": "read me"},
    ])
    version = services.publish(prompt, acting_user=None, note="v1")
    apply_prompt(prompt, {"messages": [{"role": "user", "kind": "text", "text": "{{ topic }}"}]})

    apply_snapshot(prompt, version.snapshot)

    link = prompt.messages.get(kind="resource_link")
    assert (link.resource, link.link_name) == (spec, "read me")
    assert snapshot_of(prompt) == version.snapshot


def test_apply_snapshot_embeds_inline_when_the_registry_resource_has_changed_since():
    guide = make_resource("docs://guide", text="Old rules")
    services.publish(guide, acting_user=None, note="v1")
    prompt = make_prompt("embedder", messages=[{"role": "user", "kind": "text", "text": "{{ topic }}"},
                                               {"role": "user", "kind": "resource", "resource": guide}])
    version = services.publish(prompt, acting_user=None, note="v1")
    guide.text = "New rules"
    guide.save()
    services.publish(guide, acting_user=None, note="v2")

    apply_snapshot(prompt, version.snapshot)

    embedded = prompt.messages.get(kind="resource")
    assert embedded.resource is None and embedded.text == "Old rules" and embedded.uri == "docs://guide"
    assert snapshot_of(prompt) == version.snapshot
