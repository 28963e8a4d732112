"""Importing what changed: a watch round parses only changed files and writes only changed entries;
an unchanged re-import skips each entry's comparison by its recorded digest; outcomes stay those of
a whole import (registry.portable.parsed, registry.portable.unchanged)."""

from __future__ import annotations

from pathlib import Path

import pytest

from registry.models import AuditEntry, ChangeLogEntry, Prompt, PromptVersion, Resource, ResourceVersion
from registry.portable import importer, watching
from registry.portable.importer import import_documents
from registry.portable.parsed import ParsedFiles
from registry.release import services

pytestmark = pytest.mark.django_db


def prompts_yaml(*names: str, description: str = "Say hello") -> str:
    body = "".join(f"  - name: {name}\n    description: {description} ({name})\n    labels: [production]\n"
                   f"    messages:\n      - {{role: user, text: 'Hello from {name}'}}\n" for name in names)
    return "prompts:\n" + body


def resource_yaml(uri: str, side: str) -> str:
    return f"resources:\n  - uri: {uri}\n    name: {uri.split('/')[-1]}\n    mime_type: text/plain\n    file: {side}\n"


@pytest.fixture
def compared(monkeypatch):
    """The keys of the entries the importer compared with their drafts the full way."""
    keys: list[str] = []
    full = importer._import_entry

    def counting(spec, **kwargs):
        keys.append(spec.key)
        return full(spec, **kwargs)

    monkeypatch.setattr(importer, "_import_entry", counting)
    return keys


def written() -> tuple[int, int, int, int]:
    """Audit rows, change-log rows, versions, and the sum of every draft revision."""
    revisions = sum(Prompt.objects.values_list("revision", flat=True)) + sum(
        Resource.objects.values_list("revision", flat=True))
    return (AuditEntry.objects.count(), ChangeLogEntry.objects.count(),
            PromptVersion.objects.count() + ResourceVersion.objects.count(), revisions)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("first text")
    (tmp_path / "a.yaml").write_text(prompts_yaml("a1", "a2"))
    (tmp_path / "b.yaml").write_text(prompts_yaml("b1", "b2", "b3"))
    (tmp_path / "c.yaml").write_text(resource_yaml("docs://guide", "docs/guide.md"))
    return tmp_path


def watch_round(folder: Path, parsed: ParsedFiles, *changed: Path) -> watching.Round:
    outcome = watching.import_round(folder, publish=True, note="sync", parsed=parsed, changed=changed)
    assert outcome.ok, outcome.problems
    return outcome


def settled(folder: Path) -> ParsedFiles:
    """A watcher past its first import and one unchanged round (which notes every entry's digest)."""
    parsed = ParsedFiles()
    watch_round(folder, parsed)
    watch_round(folder, parsed)
    return parsed


def test_an_unchanged_reimport_compares_no_entry_and_writes_nothing(folder, compared):
    import_documents(folder, publish=True, note="sync")
    import_documents(folder, publish=True, note="sync")  # compares every entry, notes its digest
    before = written()
    compared.clear()
    report = import_documents(folder, publish=True, note="sync")
    assert report.summary() == "prompts: 5 unchanged; resources: 1 unchanged; published 0"
    assert compared == []
    assert written() == before  # no audit rows, no change-log rows, no versions, no draft saves


def test_a_watch_round_with_one_changed_file_imports_exactly_its_changed_entries(folder, compared):
    parsed = settled(folder)
    before_a = list(Prompt.objects.filter(name__startswith="a").values_list("name", "revision", "updated_at"))
    audits, changes = AuditEntry.objects.count(), ChangeLogEntry.objects.count()
    compared.clear()
    (folder / "b.yaml").write_text(prompts_yaml("b1", "b3") + prompts_yaml("b2", description="Edited")
                                   .replace("prompts:\n", ""))
    outcome = watch_round(folder, parsed, folder / "b.yaml")
    assert outcome.line() == "prompts: 1 updated, 4 unchanged; resources: 1 unchanged; published 1"
    assert parsed.parsed == 1  # a.yaml and c.yaml were not parsed again
    assert compared == ["b2"]
    new_audits = AuditEntry.objects.filter(pk__gt=0).order_by("pk")[audits:]
    assert {row.entry_key for row in new_audits} == {"b2"}
    assert {row.action for row in new_audits} == {"edit", "publish", "override", "label_move"}
    assert list(ChangeLogEntry.objects.order_by("pk")[changes:].values_list("entry_key", flat=True)) == ["b2"]
    assert list(Prompt.objects.filter(name__startswith="a").values_list("name", "revision", "updated_at")) == before_a
    assert Prompt.objects.get(name="b2").description == "Edited (b2)"


def test_a_changed_side_file_reimports_the_entry_that_names_it(folder, compared):
    parsed = settled(folder)
    audits = AuditEntry.objects.count()
    compared.clear()
    (folder / "docs" / "guide.md").write_text("second text")
    outcome = watch_round(folder, parsed)  # by the side file's bytes, even without an event naming it
    assert outcome.line() == "prompts: 5 unchanged; resources: 1 updated; published 1"
    assert parsed.parsed == 1 and compared == ["docs://guide"]
    assert Resource.objects.get(uri="docs://guide").text == "second text"
    assert set(AuditEntry.objects.order_by("pk")[audits:].values_list("entry_key", flat=True)) == {"docs://guide"}


def test_a_deleted_file_or_entry_leaves_its_entries_as_a_whole_import_does(folder):
    parsed = settled(folder)
    before = written()
    (folder / "a.yaml").unlink()
    (folder / "b.yaml").write_text(prompts_yaml("b1", "b3"))
    outcome = watch_round(folder, parsed, folder / "a.yaml", folder / "b.yaml")
    whole = import_documents(folder, publish=True, note="sync")
    assert outcome.line() == whole.summary() == "prompts: 2 unchanged; resources: 1 unchanged; published 0"
    assert written() == before
    assert set(Prompt.objects.values_list("name", flat=True)) == {"a1", "a2", "b1", "b2", "b3"}  # kept, as before


def test_a_broken_file_saves_nothing_and_the_next_good_round_imports_every_change_since(folder):
    parsed = settled(folder)
    before = written()
    (folder / "a.yaml").write_text(prompts_yaml("a1", "a2", description="Edited"))
    (folder / "b.yaml").write_text(prompts_yaml("b1") + "    colour: red\n")
    broken = watching.import_round(folder, publish=True, note="sync", parsed=parsed)
    assert not broken.ok and "colour" in broken.problems[0]
    assert written() == before
    (folder / "b.yaml").write_text(prompts_yaml("b1", "b2", "b3"))
    outcome = watch_round(folder, parsed, folder / "b.yaml")  # a.yaml kept parsed, its change not yet saved
    assert outcome.line() == "prompts: 2 updated, 3 unchanged; resources: 1 unchanged; published 2"


def test_an_entry_in_a_new_file_defined_twice_is_refused_as_in_a_whole_import(folder):
    parsed = settled(folder)
    (folder / "d.yaml").write_text(prompts_yaml("a1"))
    refused = watching.import_round(folder, publish=True, note="sync", parsed=parsed)
    assert not refused.ok and "already defined by" in refused.problems[0]


def test_a_draft_saved_elsewhere_is_compared_again_and_made_what_the_file_says(folder, compared):
    import_documents(folder, publish=True, note="sync")
    import_documents(folder, publish=True, note="sync")
    prompt = Prompt.objects.get(name="a1")
    prompt.description = "changed in the admin"
    prompt.save()
    compared.clear()
    report = import_documents(folder, publish=True, note="sync")
    assert compared == ["a1"]
    assert report.summary() == "prompts: 1 updated, 4 unchanged; resources: 1 unchanged; published 0"
    assert Prompt.objects.get(name="a1").description == "Say hello (a1)"


def test_a_label_moved_elsewhere_is_pointed_back_as_the_file_says(folder):
    import_documents(folder, publish=True, note="sync")
    (folder / "a.yaml").write_text(prompts_yaml("a1", "a2", description="Second"))
    import_documents(folder, publish=True, note="sync")
    import_documents(folder, publish=True, note="sync")
    services.move_label(Prompt.objects.get(name="a1"), label="production", version_number=1, acting_user=None,
                        note="back", actor="test")
    report = import_documents(folder, publish=True, note="sync")
    assert report.summary() == "prompts: 5 unchanged; resources: 1 unchanged; published 0; moved 1 label(s)"
    assert Prompt.objects.get(name="a1").labels.get(name="production").version.number == 2


def test_an_archived_entry_still_warns_on_every_import(folder):
    import_documents(folder)
    import_documents(folder)
    services.set_archived(Prompt.objects.get(name="a1"), archived=True, acting_user=None)
    report = import_documents(folder)
    warned = [o.key for o in report.outcomes if any("archived" in w for w in o.warnings)]
    assert warned == ["a1"]


@pytest.fixture
def parsed_files(monkeypatch):
    """The sources of the files the importer parsed and checked."""
    sources: list[str] = []
    full = importer.read_entries

    def counting(loaded):
        sources.append(Path(loaded.source).name)
        return full(loaded)

    monkeypatch.setattr(importer, "read_entries", counting)
    return sources


def test_an_unchanged_reimport_parses_no_file_whose_bytes_it_imported_before(folder, parsed_files):
    import_documents(folder)
    import_documents(folder)
    parsed_files.clear()
    report = import_documents(folder)
    assert report.summary() == "prompts: 5 unchanged; resources: 1 unchanged"
    assert parsed_files == []
    (folder / "a.yaml").write_text(prompts_yaml("a1", "a2", description="Edited"))
    report = import_documents(folder)
    assert parsed_files == ["a.yaml"]
    assert report.summary() == "prompts: 2 updated, 3 unchanged; resources: 1 unchanged"


def test_a_changed_side_file_is_imported_although_its_yaml_file_is_the_same(folder, parsed_files):
    import_documents(folder)
    import_documents(folder)
    (folder / "docs" / "guide.md").write_text("second text")
    parsed_files.clear()
    report = import_documents(folder)
    assert parsed_files == ["c.yaml"]
    assert report.summary() == "prompts: 5 unchanged; resources: 1 updated"
    assert Resource.objects.get(uri="docs://guide").text == "second text"


def test_an_entry_defined_again_in_a_new_file_is_refused_naming_both_files(folder):
    import_documents(folder)
    import_documents(folder)
    (folder / "d.yaml").write_text(prompts_yaml("a1"))
    with pytest.raises(importer.ImportFailed) as refused:
        import_documents(folder)
    assert refused.value.problems == [f"{folder / 'd.yaml'}:2: prompts[1] (name: a1): already defined by "
                                      f"{folder / 'a.yaml'}:2: prompts[1] (name: a1); define each entry in one file."]


def test_an_entry_with_warnings_warns_on_every_import(folder):
    (folder / "e.yaml").write_text("prompts:\n  - name: e1\n    description: broken\n"
                                   "    messages:\n      - {role: user, text: 'Hello {{ who'}\n")
    for _ in range(3):
        report = import_documents(folder)
        assert [o.key for o in report.outcomes if o.warnings] == ["e1"]


def test_a_file_imported_in_many_versions_keeps_one_note(folder):
    from registry.models import ImportedFile

    for description in ("One", "Two", "Three"):
        (folder / "a.yaml").write_text(prompts_yaml("a1", "a2", description=description))
        import_documents(folder)
    assert ImportedFile.objects.filter(path=str((folder / "a.yaml").resolve())).count() == 1
    assert ImportedFile.objects.count() == 3  # a.yaml, b.yaml, c.yaml


def test_the_watcher_keeps_parsed_files_between_its_rounds(folder, monkeypatch):
    import threading

    import watchfiles

    from registry.portable import parsed as parsed_module

    parsed_sources: list[str] = []
    full = parsed_module.read_entries
    monkeypatch.setattr(parsed_module, "read_entries",
                        lambda loaded: parsed_sources.append(Path(loaded.source).name) or full(loaded))
    stop = threading.Event()

    def changes(*_args, **_kwargs):
        yield set()  # arming: nothing yet; then the first import runs
        yield set()  # a quiet wait: no round
        (folder / "b.yaml").write_text(prompts_yaml("b1", "b2", "b3", description="Edited"))
        yield {(watchfiles.Change.modified, str(folder / "b.yaml"))}
        stop.set()

    lines: list[str] = []
    rounds = watching.watch_imports(folder, publish=False, note="", log=lines.append, stop=stop, changes=changes)
    assert rounds == 2
    assert parsed_sources == ["a.yaml", "b.yaml", "c.yaml", "b.yaml"]
    assert lines[1] == "1 file(s) changed (b.yaml): prompts: 3 updated, 2 unchanged; resources: 1 unchanged"


def test_an_entry_including_a_snippet_is_checked_against_the_registry_on_every_import(folder, compared):
    from registry.models import Snippet
    from tests.factories import make_snippet, release

    release(make_snippet("style", text="Be brief."))
    (folder / "s.yaml").write_text("prompts:\n  - name: styled\n    description: composed\n"
                                   "    messages:\n      - {role: user, text: '{{> style }} Hello'}\n")
    import_documents(folder)  # a draft only: nothing published uses the snippet
    import_documents(folder)
    compared.clear()
    services.set_archived(Snippet.objects.get(name="style"), archived=True, acting_user=None)
    report = import_documents(folder)
    assert "styled" in compared  # the unchanged shortcut does not vouch for what it names elsewhere
    assert [o.key for o in report.outcomes if any("style" in w for w in o.warnings)] == ["styled"]
