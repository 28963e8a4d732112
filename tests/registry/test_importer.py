from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from registry.errors import RegistryError
from registry.models import (
    AuditAction,
    AuditEntry,
    ChangeLogEntry,
    Prompt,
    PromptLabel,
    PromptVersion,
    Resource,
    ResourceVersion,
)
from registry.portable.importer import ImportFailed, export_yaml, import_documents
from registry.release import services
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer
from tests.factories import make_prompt, make_resource

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE = ROOT / "tests" / "fixtures" / "conformance.yaml"
DEMO = ROOT / "demo" / "registry.yaml"

DOC = """
resources:
  - uri: docs://guide
    name: guide
    mime_type: text/markdown
    text: "# Guide"
prompts:
  - name: greet
    description: Say hello
    tags: [Demo]
    arguments:
      - {name: who, required: true, suggestions: [world, team]}
    messages:
      - {role: user, text: "Hello {{ who }}"}
      - {role: user, resource: {from: "docs://guide"}}
  - name: farewell
    description: Say goodbye
    labels: [production, staging]
    messages:
      - {role: user, text: Goodbye}
"""


@pytest.fixture(autouse=True)
def in_tmp_path(tmp_path, monkeypatch):
    """Files are imported by relative path, so messages name them as a user would see them."""
    monkeypatch.chdir(tmp_path)


def write(tmp_path: Path, text: str, name: str = "demo.yaml") -> Path:
    (tmp_path / name).write_text(text)
    return Path(name)


def counts() -> dict[str, int]:
    return {"audit": AuditEntry.objects.count(), "changes": ChangeLogEntry.objects.count(),
            "prompt_versions": PromptVersion.objects.count(), "resource_versions": ResourceVersion.objects.count(),
            "prompts": Prompt.objects.count(), "resources": Resource.objects.count(),
            "labels": PromptLabel.objects.count()}


def test_import_without_publish_writes_audited_drafts_only(tmp_path):
    report = import_documents(write(tmp_path, DOC), publish=False)

    assert [(o.kind, o.key, o.status) for o in report.outcomes] == [
        ("resource", "docs://guide", "created"), ("prompt", "greet", "created"), ("prompt", "farewell", "created")]
    greet = Prompt.objects.get(name="greet")
    assert greet.tag_set == {"demo"}
    assert greet.messages.get(position=1).resource == Resource.objects.get(uri="docs://guide")
    assert PromptVersion.objects.count() == 0
    audit = AuditEntry.objects.filter(action=AuditAction.CREATE)
    assert audit.count() == 3 and {a.actor_name for a in audit} == {"registry_import"}
    assert report.summary() == "prompts: 2 created; resources: 1 created"


def test_import_with_publish_publishes_and_points_the_listed_labels(tmp_path):
    report = import_documents(write(tmp_path, DOC), publish=True, note="First import")

    assert report.summary() == "prompts: 2 created; resources: 1 created; published 3"
    farewell = Prompt.objects.get(name="farewell")
    assert sorted(farewell.labels.values_list("name", "version__number")) == [("production", 1), ("staging", 1)]
    greet_v1 = Prompt.objects.get(name="greet").versions.get()
    assert greet_v1.change_note == "First import" and greet_v1.author_name == "registry_import"
    served = catalog_for("production").get_prompt(Viewer(), "greet", {"who": "team"}).result
    assert served["messages"][0]["content"]["text"] == "Hello team"
    assert served["messages"][1]["content"]["resource"]["text"] == "# Guide"


def test_reimporting_the_same_file_writes_no_versions_audit_rows_or_changes(tmp_path):
    path = write(tmp_path, DOC)
    import_documents(path, publish=True, note="First import")
    before = counts()

    report = import_documents(path, publish=True, note="Again")

    assert counts() == before
    assert {o.status for o in report.outcomes} == {"unchanged"} and not report.changed
    assert report.summary() == "prompts: 2 unchanged; resources: 1 unchanged; published 0"


def test_changing_content_publishes_a_new_version_with_the_field_diff(tmp_path):
    import_documents(write(tmp_path, DOC), publish=True, note="First import")

    report = import_documents(write(tmp_path, DOC.replace("Goodbye", "Bye now")), publish=True, note="Shorter")

    [outcome] = [o for o in report.outcomes if o.status != "unchanged"]
    assert (outcome.key, outcome.status, outcome.published) == ("farewell", "updated", 2)
    assert outcome.changes == [{"field": "messages[1].content.text", "before": "Goodbye", "after": "Bye now"}]
    edit = AuditEntry.objects.get(action=AuditAction.EDIT)
    assert edit.entry_key == "farewell" and edit.changes == outcome.changes
    farewell = Prompt.objects.get(name="farewell")
    assert sorted(farewell.labels.values_list("name", "version__number")) == [("production", 2), ("staging", 2)]


def test_republishing_a_resource_republishes_prompts_that_embed_it(tmp_path):
    import_documents(write(tmp_path, DOC), publish=True, note="First import")

    report = import_documents(write(tmp_path, DOC.replace('"# Guide"', '"# Guide v2"')), publish=True, note="v2")

    assert {(o.key, o.published) for o in report.outcomes} == {
        ("docs://guide", 2), ("greet", 2), ("farewell", None)}
    assert {o.key: o.status for o in report.outcomes}["greet"] == "unchanged"  # its draft did not change


def test_a_label_moved_elsewhere_is_pointed_back_only_when_publishing(tmp_path):
    path = write(tmp_path, DOC)
    import_documents(path, publish=True, note="v1")
    import_documents(write(tmp_path, DOC.replace("Goodbye", "Bye")), publish=True, note="v2")
    farewell = Prompt.objects.get(name="farewell")
    services.rollback(farewell, acting_user=None, note="bad wording")

    report = import_documents(write(tmp_path, DOC.replace("Goodbye", "Bye")), publish=True, note="forward again")

    outcome = next(o for o in report.outcomes if o.key == "farewell")
    assert (outcome.published, outcome.labels_moved) == (None, ["production"])
    assert farewell.labels.get(name="production").version.number == 2


def test_dry_run_reports_the_diff_and_writes_nothing(tmp_path):
    import_documents(write(tmp_path, DOC), publish=True, note="v1")
    before = counts()

    report = import_documents(write(tmp_path, DOC.replace("Goodbye", "Bye")), publish=True, note="v2", dry_run=True)

    assert counts() == before
    assert Prompt.objects.get(name="farewell").messages.get().text == "Goodbye"
    outcome = next(o for o in report.outcomes if o.key == "farewell")
    assert (outcome.status, outcome.published) == ("updated", 2)
    assert report.summary().endswith("published 1 (dry run: nothing saved)")


def test_an_error_anywhere_saves_nothing_and_names_file_entry_and_field(tmp_path):
    broken = DOC + """
  - name: code-review
    description: Review
    messages:
      - {role: user, text: "fine"}
      - role: user
        text: |
          Review this.
          Focus on:
          {{ focus
"""
    with pytest.raises(ImportFailed) as caught:
        import_documents(write(tmp_path, broken), publish=True, note="Import")

    assert caught.value.problems == [
        ("demo.yaml:27: prompts[3] (name: code-review): messages[2].text: "
        "Line 3: '{{' is never closed with '}}' on the same line.")
    ]
    assert counts() == dict.fromkeys(counts(), 0)


def test_publish_time_checks_become_errors_naming_the_entry(tmp_path):
    doc = "prompts:\n  - name: p\n    description: d\n    messages: [{text: 'Hello {{ who }}'}]\n"
    path = write(tmp_path, doc)

    draft_only = import_documents(path, publish=False)
    assert "is not a declared argument" in draft_only.outcomes[0].warnings[0]
    with pytest.raises(ImportFailed) as caught:
        import_documents(path, publish=True, note="Go")
    assert caught.value.problems == [
        ("demo.yaml:2: prompts[1] (name: p): The placeholder {{ who }} is not a declared argument; "
        "add it or fix the spelling.")]
    assert PromptVersion.objects.count() == 0


def test_unknown_registry_resource_in_from_is_an_error(tmp_path):
    doc = "prompts:\n  - name: p\n    messages: [{resource_link: {from: 'docs://missing'}}]\n"
    with pytest.raises(ImportFailed) as caught:
        import_documents(write(tmp_path, doc), publish=False)
    assert caught.value.problems[0].startswith("demo.yaml:3: prompts[1] (name: p): messages[1].resource_link.from: "
                                               "no registry resource has the URI docs://missing")
    assert Prompt.objects.count() == 0


def test_malformed_yaml_is_reported_with_line_and_column(tmp_path):
    with pytest.raises(ImportFailed) as caught:
        import_documents(write(tmp_path, "prompts:\n  - name: a\n   bad: [\n"), publish=False)
    assert caught.value.problems[0].startswith("demo.yaml:")
    assert "malformed YAML" in caught.value.problems[0]


def test_publishing_needs_a_note_and_the_publish_permission(tmp_path, editor):
    path = write(tmp_path, DOC)
    with pytest.raises(ImportFailed, match="change note"):
        import_documents(path, publish=True, note=" ")
    with pytest.raises(ImportFailed) as caught:
        import_documents(path, publish=True, note="Go", acting_user=editor)
    assert "may edit drafts but not publish" in caught.value.problems[0]
    assert Prompt.objects.count() == 0


def test_a_tags_only_change_is_published_as_a_new_version(tmp_path):
    """Tags decide who sees a version, so changing them is a content change like any other."""
    import_documents(write(tmp_path, DOC), publish=True, note="v1")
    changes_before = ChangeLogEntry.objects.count()

    report = import_documents(write(tmp_path, DOC.replace("[Demo]", "[demo, public]")), publish=True, note="tags")

    outcome = next(o for o in report.outcomes if o.key == "greet")
    assert (outcome.status, outcome.published) == ("updated", 2)
    assert outcome.changes == [{"field": "tags", "before": ["demo"], "after": ["demo", "public"]}]
    assert AuditEntry.objects.filter(action=AuditAction.EDIT, entry_key="greet").count() == 1
    assert Prompt.objects.get(name="greet").versions.get(number=2).snapshot["tags"] == ["demo", "public"]
    assert ChangeLogEntry.objects.count() == changes_before + 1  # the label move to v2


def test_export_then_import_into_the_same_registry_changes_nothing(tmp_path):
    import_documents(DEMO, publish=True, note="Demo")
    make_prompt("admin-made", description="Made in the admin", tags="x")
    make_resource("docs://only-draft", text="draft")
    # a newer draft that is only on staging
    support = Prompt.objects.get(name="support-reply")
    support.description = "Edited"
    support.save()
    services.publish(support, acting_user=None, note="staging only", labels=["staging"])
    before = counts()
    exported = write(tmp_path, export_yaml(), "export.yaml")

    report = import_documents(exported, publish=False)
    assert not report.changed and counts() == before
    report = import_documents(exported, publish=True, note="Round trip")  # publishes only the never-published drafts
    assert {o.key for o in report.outcomes if o.changed} == {"admin-made", "docs://only-draft"}
    assert support.labels.get(name="production").version.number == 1


def test_export_shows_released_versions_and_labels_on_the_newest_version():
    import_documents(DEMO, publish=True, note="Demo")
    document = yaml.safe_load(export_yaml())
    support = next(p for p in document["prompts"] if p["name"] == "support-reply")
    assert support["released"] == {"production": 1, "staging": 1}
    assert support["labels"] == ["production", "staging"]
    assert [r["uri"] for r in document["resources"]] == sorted(r["uri"] for r in document["resources"])


def test_conformance_fixture_imports_twice_cleanly_and_serves_what_the_suite_expects():
    first = import_documents(CONFORMANCE, publish=True, note="conformance fixtures")
    assert first.summary() == "prompts: 5 created; resources: 3 created; templates: 1 created; published 9"
    before = counts()
    second = import_documents(CONFORMANCE, publish=True, note="conformance fixtures")
    assert not second.changed and counts() == before

    catalog = catalog_for("production")
    viewer = Viewer()
    assert {p["name"] for p in catalog.prompts(viewer)} == {
        "test_simple_prompt", "test_prompt_with_arguments", "test_prompt_with_embedded_resource",
        "test_prompt_with_image", "test_input_required_result_prompt"}
    assert all(p.get("description") for p in catalog.prompts(viewer))
    args = catalog.get_prompt(viewer, "test_prompt_with_arguments", {"arg1": "testValue1", "arg2": "testValue2"})
    assert "arg1='testValue1', arg2='testValue2'" in args.result["messages"][0]["content"]["text"]
    embedded = catalog.get_prompt(viewer, "test_prompt_with_embedded_resource",
                                  {"resourceUri": "test://example-resource"}).result["messages"]
    assert embedded[0]["content"] == {"type": "resource", "resource": {
        "uri": "test://example-resource", "mimeType": "text/plain", "text": "Embedded resource content for testing."}}
    image = catalog.get_prompt(viewer, "test_prompt_with_image", {}).result["messages"][0]["content"]
    assert image["type"] == "image" and image["mimeType"] == "image/png" and len(image["data"]) == 96
    assert [r["uri"] for r in catalog.resources(viewer)] == [
        "registry://changes/recent", "test://static-binary", "test://static-text", "test://watched-resource"]
    assert catalog.read_resource(viewer, "test://static-binary").result["contents"][0]["blob"]
    data = catalog.read_resource(viewer, "test://template/123/data").result["contents"][0]
    assert data["text"] == '{"id": "123", "templateTest": true, "data": "Data for ID: 123"}'


def test_demo_data_publishes_and_reimports_without_changes():
    report = import_documents(DEMO, publish=True, note="Demo data")
    assert not any(o.warnings for o in report.outcomes)
    assert report.published == len(report.outcomes)
    assert Prompt.objects.get(name="support-reply").labels.filter(name="staging").exists()
    assert bytes(Resource.objects.get(uri="assets://brand/logo.png").data).startswith(b"\x89PNG")
    assert not import_documents(DEMO, publish=True, note="Demo data").changed


def test_data_can_be_imported_without_a_file():
    report = import_documents({"resources": [{"uri": "docs://x", "name": "x", "text": "hi"}]}, publish=False)
    assert report.source == "<data>" and report.outcomes[0].status == "created"
    with pytest.raises(RegistryError):
        import_documents({"resources": [{"uri": "nope", "name": "x"}]}, publish=False)


def test_importing_an_archived_entry_updates_it_but_warns_that_it_stays_unserved(tmp_path):
    import_documents(write(tmp_path, DOC), publish=True, note="v1")
    services.set_archived(Prompt.objects.get(name="farewell"), archived=True, acting_user=None)

    report = import_documents(write(tmp_path, DOC), publish=True, note="again")

    outcome = next(o for o in report.outcomes if o.key == "farewell")
    assert outcome.status == "unchanged" and "archived" in outcome.warnings[0]
    assert Prompt.objects.get(name="farewell").archived_at is not None


def _many(n: int, start: int = 0) -> str:
    prompts = "".join(
        f"  - name: bulk-{i:03d}\n    description: Bulk {i}\n    tags: [bulk]\n"
        f"    arguments: [{{name: who, required: true}}]\n"
        f"    messages:\n      - {{role: user, text: 'Hi {{{{ who }}}} {i}'}}\n"
        f"      - {{role: user, resource: {{from: 'docs://bulk-{i:03d}'}}}}\n"
        for i in range(start, start + n))
    resources = "".join(f"  - uri: docs://bulk-{i:03d}\n    name: bulk-{i:03d}\n    text: 'Doc {i}'\n"
                        for i in range(start, start + n))
    return f"resources:\n{resources}prompts:\n{prompts}"


def _queries(func) -> int:
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        func()
    return len(captured)


def test_export_reads_a_fixed_number_of_queries_whatever_the_number_of_entries(tmp_path):
    import_documents(write(tmp_path, _many(3)), publish=True, note="three")
    few = _queries(export_yaml)
    import_documents(write(tmp_path, _many(30, start=3)), publish=True, note="thirty more")
    many = _queries(export_yaml)
    assert many == few
    document = yaml.safe_load(export_yaml())
    assert len(document["prompts"]) == len(document["resources"]) == 33
    assert document["prompts"][5]["messages"][1] == {"role": "user", "resource": {"from": "docs://bulk-005"}}
    assert document["resources"][0]["released"] == {"production": 1}


def test_reimport_reads_unchanged_entries_in_bulk_rather_than_one_by_one(tmp_path):
    """Entries, child rows and newest versions are read in bulk; per unchanged pair only the label check of
    each entry and the embedded resource's version are left."""
    import_documents(write(tmp_path, _many(3)), publish=True, note="three")
    few = _queries(lambda: import_documents(write(tmp_path, _many(3)), publish=True, note="again"))
    import_documents(write(tmp_path, _many(30)), publish=True, note="thirty")
    many = _queries(lambda: import_documents(write(tmp_path, _many(30)), publish=True, note="again"))
    assert not import_documents(write(tmp_path, _many(30)), publish=True, note="again").changed
    assert many - few <= 27 * 3


TYPED_DOC = """
resources:
  - {uri: "docs://style", name: style, text: Be brief.}
prompts:
  - name: reply
    description: Reply to a customer
    arguments:
      - {name: tone, description: Tone of the reply, required: true, type: enum, choices: [formal, warm]}
      - {name: count, type: integer, min: 1, max: 10, default: 5}
      - {name: code, required: true, type: string, max_length: 8, pattern: "[A-Z]+-[0-9]+"}
      - {name: doc, type: resource, default: "docs://style"}
    messages:
      - text: "{{ tone }} {{ count }} {{ code }} {{ doc }}"
"""


def test_typed_arguments_import_publish_export_and_reimport_unchanged(tmp_path):
    path = write(tmp_path, TYPED_DOC)
    import_documents(path, publish=True, note="typed")
    catalog = catalog_for("production")
    with pytest.raises(RegistryError) as caught:
        catalog.get_prompt(Viewer(), "reply", {"tone": "loud", "code": "AB-1"})
    assert caught.value.invalid == [{"name": "tone", "reason": "must be one of: formal, warm"}]
    served = catalog.get_prompt(Viewer(), "reply", {"tone": "warm", "code": "AB-1"}).result
    assert served["messages"][0]["content"]["text"] == "warm 5 AB-1 docs://style"

    exported = yaml.safe_load(export_yaml())
    [reply] = [p for p in exported["prompts"] if p["name"] == "reply"]
    assert reply["arguments"][1] == {"name": "count", "required": False, "default": "5", "type": "integer",
                                     "min": 1, "max": 10}
    before = counts()
    (tmp_path / "again.yaml").write_text(export_yaml())
    report = import_documents(Path("again.yaml"), publish=True, note="again")
    assert counts() == before and not report.changed


def test_import_refuses_a_typed_default_naming_no_registry_resource(tmp_path):
    path = write(tmp_path, TYPED_DOC.replace('default: "docs://style"', 'default: "docs://nowhere"'))
    with pytest.raises(ImportFailed) as caught:
        import_documents(path, publish=True, note="typed")
    assert "the default 'docs://nowhere' must be the URI of a registry resource" in str(caught.value.problems)
    assert not Prompt.objects.filter(name="reply").exists()


@pytest.mark.parametrize("bulk", [True, False], ids=["bulk", "per-entry"])
@pytest.mark.parametrize("existing", [False, True], ids=["new", "existing"])
def test_two_spellings_of_one_uri_in_a_file_are_refused_as_one_entry_defined_twice(tmp_path, bulk, existing):
    """URIs and URI templates are stored normalised (scheme and host lower case): two spellings name one
    entry, reported like any entry defined twice instead of failing on the database's unique key."""
    if existing:
        make_resource(uri="docs://guide/x")
    path = tmp_path / "twice.yaml"
    path.write_text("""
resources:
  - {uri: "docs://Guide/x", name: a, text: one}
  - {uri: "docs://guide/x", name: b, text: two}
templates:
  - {uri_template: "tickets://Desk/{id}", name: t, body: "{{ id }}"}
  - {uri_template: "tickets://desk/{id}", name: u, body: "{{ id }}!"}
""")
    with pytest.raises(ImportFailed) as failed:
        import_documents(path, publish=True, note="twice", bulk=bulk)
    assert [p.split(": ", 1)[0].rsplit(":", 1)[1] for p in failed.value.problems] == ["4", "7"]
    assert all("already defined by" in p for p in failed.value.problems)
