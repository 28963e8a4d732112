"""Folders (registry/formats/folders.py) and the entry change lists' filters (registry/admin/filters.py).

A folder files an entry for its editors: validated, filtered by with its sub-folders, audited on
every path, and invisible to MCP clients (no version, no review, no stale request).
"""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.utils import timezone, translation

from registry.admin.badges import entry_badges
from registry.authoring.snapshots import content_hash, snapshot_of
from registry.formats.folders import folder_and_parents, validate_folder
from registry.models import AuditAction, AuditEntry, Prompt
from registry.portable.importer import export_yaml, import_documents
from registry.release import reviews, rollouts
from tests.factories import make_prompt, make_resource, make_template, release
from tests.registry.test_admin import client_for, form_errors, prompt_post, url

pytestmark = pytest.mark.django_db


# ------------------------------------------------------------------------------------ validation
@pytest.mark.parametrize("folder", ["support", "support/billing", "a/b-c/d_e/1", "Support/Billing", ""])
def test_a_folder_is_path_segments_of_letters_digits_dashes_and_underscores(folder):
    validate_folder(folder)


@pytest.mark.parametrize("folder", ["/support", "support/", "support//billing", "support/../x", "..", "a b",
                                    "support/bill.ing", "ünïcode", "x" * 61, "/".join(["abcdefghij"] * 19)])
def test_a_folder_that_is_not_such_a_path_is_refused_with_a_coded_error(folder):
    with pytest.raises(ValidationError) as caught:
        validate_folder(folder)
    assert caught.value.error_list[0].code == "invalid_folder"


@pytest.mark.parametrize(("language", "word"), [("de", "kein Ordnerpfad"), ("zh-hans", "不是有效的文件夹路径")])
def test_the_folder_error_is_translated(language, word):
    with pytest.raises(ValidationError) as caught:
        validate_folder("support/")
    with translation.override(language):
        assert word in caught.value.messages[0]


def test_a_folder_is_stored_lower_cased_and_the_model_refuses_a_bad_one():
    prompt = make_prompt(name="p", folder="Support/Billing")
    assert Prompt.objects.get(pk=prompt.pk).folder == "support/billing"
    prompt.folder = "support/"
    with pytest.raises(ValidationError):
        prompt.full_clean()


def test_the_folder_choices_include_every_parent_folder():
    assert folder_and_parents({"support/billing/eu", "sales"}) == [
        "sales", "support", "support/billing", "support/billing/eu"]


# ---------------------------------------------------------------------------- nothing clients see
def test_moving_a_published_entry_changes_nothing_served_and_needs_no_new_version():
    prompt = make_prompt(name="p")
    release(prompt, note="v1")
    served = content_hash(snapshot_of(prompt))
    prompt.folder = "support/billing"
    prompt.save()
    prompt = Prompt.objects.get(pk=prompt.pk)
    assert "folder" not in snapshot_of(prompt) and content_hash(snapshot_of(prompt)) == served
    assert "folder" not in str(prompt.versions.get().listing)
    assert [b.tone for b in entry_badges(prompt)] == []  # no "draft changed since v1"


def test_moving_an_entry_leaves_its_review_open(editor):
    prompt = make_prompt(name="p")
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production")
    prompt.folder = "support"
    prompt.save()
    assert reviews.staleness_of([review])[review.pk] == ""


# ------------------------------------------------------------------------------------- admin
def _names(response) -> list[str]:
    return sorted(row.key for row in response.context["cl"].result_list)


def test_the_folder_filter_shows_the_folder_and_its_sub_folders(client, editor):
    for name, folder in (("a", "support"), ("b", "support/billing"), ("c", "supportive"), ("d", "")):
        make_prompt(name=name, folder=folder)
    client_for(client, editor)
    assert _names(client.get(url("prompt_changelist"), {"folder": "support"})) == ["a", "b"]
    assert _names(client.get(url("prompt_changelist"), {"folder": "support/billing"})) == ["b"]
    assert _names(client.get(url("prompt_changelist"), {"folder": "/"})) == ["d"]
    page = client.get(url("prompt_changelist")).content.decode()
    assert "?folder=support%2Fbilling" in page and "?folder=supportive" in page


def test_the_tag_label_and_kind_filters(client, editor):
    tagged = make_prompt(name="tagged", tags="billing, faq")
    make_prompt(name="plain", messages=[{"role": "user", "kind": "resource_link", "uri": "https://x.example/a",
                                         "link_name": "a"}])
    release(tagged, note="v1", labels=("staging",))
    client_for(client, editor)
    assert _names(client.get(url("prompt_changelist"), {"tag": "faq"})) == ["tagged"]
    assert _names(client.get(url("prompt_changelist"), {"served_label": "staging"})) == ["tagged"]
    assert _names(client.get(url("prompt_changelist"), {"served_label": "-"})) == ["plain"]
    assert _names(client.get(url("prompt_changelist"), {"content_kind": "resource_link"})) == ["plain"]
    make_resource("docs://text", text="hello")
    make_resource("docs://file", text="", data=b"\x00\x01")
    assert _names(client.get(url("resource_changelist"), {"content_kind": "file"})) == ["docs://file"]
    assert _names(client.get(url("resource_changelist"), {"content_kind": "text"})) == ["docs://text"]


def _edit(prompt: Prompt, text: str) -> None:
    message = prompt.messages.first()
    message.text = f"{text} {{{{ topic }}}}"
    message.save()


def test_the_state_filter_picks_the_entries_whose_badges_say_so(client, editor, publisher):
    make_prompt(name="quiet")
    release(make_prompt(name="published"), note="v1")
    changed = make_prompt(name="changed")
    release(changed, note="v1")
    _edit(changed, "new")
    in_review = make_prompt(name="in-review")
    reviews.request_publication(in_review, acting_user=editor, note="please", label="production")
    stale = make_prompt(name="stale")
    reviews.request_publication(stale, acting_user=editor, note="please", label="production")
    _edit(stale, "after the request")
    rolling = make_prompt(name="rolling")
    release(rolling, note="v1")
    _edit(rolling, "second")
    release(rolling, note="v2", labels=("staging",))
    rollouts.set_rollout(rolling, label="production", version_number=2, percent=10, acting_user=None, note="try")
    scheduled = make_prompt(name="scheduled")
    review = reviews.request_publication(scheduled, acting_user=editor, note="later", label="production")
    reviews.approve(review, acting_user=publisher, go_live_at=timezone.now() + timedelta(days=1))
    client_for(client, editor)

    def state(value: str) -> list[str]:
        return _names(client.get(url("prompt_changelist"), {"state": value}))

    assert state("changed") == ["changed"]
    assert state("review") == ["in-review"]
    assert state("stale") == ["stale"]
    assert state("rollout") == ["rolling"]
    assert state("scheduled") == ["scheduled"]


def test_saving_the_folder_in_the_admin_is_audited(client, editor):
    prompt = make_prompt(name="p")
    response = client_for(client, editor).post(url("prompt_change", prompt.pk),
                                               prompt_post(prompt, folder="Support/Billing"))
    assert response.status_code == 302, form_errors(response)
    row = AuditEntry.objects.get(entry_id=prompt.pk, action=AuditAction.FOLDER_MOVED)
    assert row.actor == editor
    assert row.changes == [{"field": "folder", "before": "", "after": "support/billing"}]
    assert not AuditEntry.objects.filter(entry_id=prompt.pk, action=AuditAction.EDIT).exists()


def test_the_admin_refuses_a_bad_folder_with_the_message(client, editor):
    prompt = make_prompt(name="p")
    response = client_for(client, editor).post(url("prompt_change", prompt.pk), prompt_post(prompt, folder="a/../b"))
    assert response.status_code == 200
    assert "is not a folder path" in response.content.decode()
    assert Prompt.objects.get(pk=prompt.pk).folder == ""


# ------------------------------------------------------------------------------ prompts as code
YAML = """
resources:
  - uri: docs://guide
    name: guide
    folder: support/billing
    text: "# Guide"
templates:
  - uri_template: "tickets://{id}"
    name: ticket
    folder: support
    body: "Ticket {{ id }}"
prompts:
  - name: greet
    folder: Support
    messages:
      - {role: user, text: Hello}
"""


@pytest.mark.parametrize("bulk", [True, False])
def test_import_then_export_gives_the_folders_back_and_a_move_is_audited(tmp_path, bulk):
    path = tmp_path / "registry.yaml"
    path.write_text(YAML)
    import_documents(path, bulk=bulk)
    assert Prompt.objects.get(name="greet").folder == "support"
    exported = export_yaml()
    assert "folder: support/billing" in exported and "folder: support\n" in exported
    path.write_text(exported.replace("folder: support/billing", "folder: archive"))
    report = import_documents(path, bulk=bulk)
    assert [(o.key, o.status) for o in report.outcomes if o.status != "unchanged"] == [("docs://guide", "updated")]
    row = AuditEntry.objects.filter(action=AuditAction.FOLDER_MOVED, entry_key="docs://guide").latest("id")
    assert row.changes == [{"field": "folder", "before": "support/billing", "after": "archive"}]
    assert row.actor_name != "database"


def test_import_refuses_a_bad_folder_naming_the_field(tmp_path):
    path = tmp_path / "registry.yaml"
    path.write_text(YAML.replace("folder: Support", "folder: support/"))
    with pytest.raises(Exception) as caught:
        import_documents(path)
    assert "folder" in str(caught.value) and "is not a folder path" in str(caught.value)


def test_templates_carry_folders_too(client, editor):
    make_template("t://{id}", folder="ops")
    make_template("u://{id}")
    client_for(client, editor)
    assert _names(client.get(url("resourcetemplate_changelist"), {"folder": "ops"})) == ["t://{id}"]


def test_the_audit_log_says_where_an_entry_was_moved_in_the_readers_language(client, superuser):
    prompt = make_prompt(name="p")
    prompt.folder = "support"
    prompt.save()  # a move outside the services is audited too (actor "database")
    row = AuditEntry.objects.get(action=AuditAction.FOLDER_MOVED)
    client_for(client, superuser)
    page = client.get(url("auditentry_changelist")).content.decode()
    assert "Moved from the folder “(no folder)” to “support”." in page
    page = client.get(url("auditentry_change", row.pk), HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert "Aus dem Ordner „(kein Ordner)“ nach „support“ verschoben." in page


def test_the_commands_round_trip_the_folders(tmp_path):
    source, again = tmp_path / "in.yaml", tmp_path / "out.yaml"
    source.write_text(YAML)
    call_command("registry_import", str(source), stdout=StringIO(), stderr=StringIO())
    call_command("registry_export", str(again), stdout=StringIO(), stderr=StringIO())
    import_documents(again)  # the export imported again moves nothing
    moves = AuditEntry.objects.filter(action=AuditAction.FOLDER_MOVED)
    assert sorted((row.entry_key, row.changes[0]["after"]) for row in moves) == [
        ("docs://guide", "support/billing"), ("greet", "support"), ("tickets://{id}", "support")]
    assert "folder: support/billing" in again.read_text()


def test_the_state_filter_works_only_among_the_entries_the_other_filters_left():
    """It read and judged every entry of the kind (every published one for "changed"), whatever
    folder or tag was chosen; now only those the list's queryset still holds."""
    from registry.admin.badges import entries_in_state

    for name, folder in (("billing-one", "support/billing"), ("sales-one", "sales")):
        prompt = make_prompt(name=name)
        prompt.folder = folder
        prompt.save()
        release(prompt, note="v1")
        _edit(Prompt.objects.get(name=name), "new")
    in_support = Prompt.objects.filter(folder__startswith="support")
    assert [Prompt.objects.get(pk=pk).name for pk in entries_in_state(in_support, "changed")] == ["billing-one"]
    assert len(entries_in_state(Prompt.objects.all(), "changed")) == 2


@pytest.mark.parametrize("bulk", [True, False])
def test_a_file_without_folder_moves_the_entry_to_the_top_level_and_says_so(tmp_path, bulk):
    make_prompt("greet", folder="support/billing")
    path = tmp_path / "registry.yaml"
    path.write_text("prompts:\n  - name: greet\n    description: changed\n"
                    "    messages:\n      - {role: user, text: Hello}\n")
    report = import_documents(path, bulk=bulk)
    assert Prompt.objects.get(name="greet").folder == ""  # the file is the whole truth, as for every key
    [outcome] = report.outcomes
    assert any("moved from the folder 'support/billing' to the top level" in w and "folder: support/billing" in w
               for w in outcome.warnings), outcome.warnings
    row = AuditEntry.objects.filter(action=AuditAction.FOLDER_MOVED, entry_key="greet").latest("id")
    assert row.changes == [{"field": "folder", "before": "support/billing", "after": ""}]


@pytest.mark.parametrize("bulk", [True, False])
def test_a_file_naming_the_folder_moves_nothing_and_warns_of_nothing(tmp_path, bulk):
    make_prompt("greet", folder="support")
    path = tmp_path / "registry.yaml"
    path.write_text("prompts:\n  - name: greet\n    folder: support\n    description: changed\n"
                    "    messages:\n      - {role: user, text: Hello}\n")
    [outcome] = import_documents(path, bulk=bulk).outcomes
    assert outcome.status == "updated" and not any("top level" in w for w in outcome.warnings)
    assert Prompt.objects.get(name="greet").folder == "support"
