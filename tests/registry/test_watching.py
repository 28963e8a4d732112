"""Watched folders: one import per burst of file changes; a broken round saves nothing; folders import as one."""

import gc
import threading
import time
import weakref
from pathlib import Path

import pytest

from registry.models import Resource
from registry.portable import watching
from registry.portable.importer import ImportFailed, import_documents
from registry.serving.catalogs import catalog_for
from registry.serving.viewer import Viewer

ANYONE = Viewer()


def resource_yaml(uri: str, side: str | None = None, text: str = "inline") -> str:
    body = f"    file: {side}\n" if side else f"    text: {text}\n"
    return f"resources:\n  - uri: {uri}\n    name: {uri.split('/')[-1]}\n    mime_type: text/plain\n{body}"


class Watcher:
    """watch_imports in a thread with a counting round; stopped and joined at the end."""

    def __init__(self, path: Path) -> None:
        self.rounds: list[float] = []
        self.lines: list[str] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=watching.watch_imports, kwargs={
            "path": path, "publish": False, "note": "", "log": self.lines.append, "stop": self.stop,
            "run_round": self.round})

    def round(self) -> watching.Round:
        self.rounds.append(time.monotonic())
        return watching.Round(problems=("counted",), side_files=frozenset())

    def wait_rounds(self, n: int, timeout: float = 10.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.rounds) < n and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(self.rounds) >= n, f"only {len(self.rounds)} round(s): {self.lines}"

    def __enter__(self) -> "Watcher":
        self.thread.start()
        self.wait_rounds(1)
        time.sleep(0.3)  # the native watcher is set up right after the first round
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        self.thread.join(10)
        assert not self.thread.is_alive(), "the watcher did not stop"


def test_forty_files_changed_in_a_burst_make_one_import(tmp_path):
    for i in range(40):
        (tmp_path / f"r{i:02d}.yaml").write_text(resource_yaml(f"docs://r{i}"))
    with Watcher(tmp_path) as watcher:
        for i in range(40):  # like a git pull: forty files rewritten within a moment
            (tmp_path / f"r{i:02d}.yaml").write_text(resource_yaml(f"docs://r{i}", text="changed"))
            time.sleep(0.005)
        watcher.wait_rounds(2)
        time.sleep((watching.QUIET_MS + watching.BURST_MS) / 1000)
        assert len(watcher.rounds) == 2, watcher.lines
    assert watcher.lines[1].startswith("40 file(s) changed (r00.yaml, r01.yaml, r02.yaml and 37 more)")


def test_an_edit_made_while_the_first_import_runs_is_imported_by_the_next_round(tmp_path):
    """Watching starts before the first import: an edit during it (a long import of a large folder)
    is not lost, however long the import takes."""
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a"))
    rounds, lines, stop = [], [], threading.Event()

    def run_round():
        rounds.append(time.monotonic())
        if len(rounds) == 1:  # during the first import: someone saves the file
            (tmp_path / "a.yaml").write_text(resource_yaml("docs://a", text="edited meanwhile"))
            time.sleep(0.5)  # the import goes on for a while after the edit
        return watching.Round(problems=("counted",), side_files=frozenset())

    thread = threading.Thread(target=watching.watch_imports, kwargs={
        "path": tmp_path, "publish": False, "note": "", "log": lines.append, "stop": stop, "run_round": run_round})
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while len(rounds) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(rounds) == 2, lines
        assert lines[1].startswith("1 file(s) changed (a.yaml)")
    finally:
        stop.set()
        thread.join(10)


def test_files_that_are_neither_yaml_nor_named_side_files_start_no_round(tmp_path):
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a"))
    with Watcher(tmp_path) as watcher:
        (tmp_path / "notes.txt").write_text("scratch")
        (tmp_path / ".git").mkdir()
        (tmp_path / ".git" / "x.yaml").write_text("hidden")
        time.sleep((watching.QUIET_MS + 1000) / 1000)
        assert len(watcher.rounds) == 1, watcher.lines


def test_watching_one_file_ignores_the_other_yaml_files_beside_it(tmp_path):
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a"))
    with Watcher(tmp_path / "a.yaml") as watcher:
        (tmp_path / "b.yaml").write_text(resource_yaml("docs://b"))
        time.sleep((watching.QUIET_MS + 1000) / 1000)
        assert len(watcher.rounds) == 1, watcher.lines
        (tmp_path / "a.yaml").write_text(resource_yaml("docs://a", text="changed"))
        watcher.wait_rounds(2)


def test_a_named_side_file_changing_starts_a_round(tmp_path, monkeypatch):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("first")
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a", side="docs/a.md"))
    side = (tmp_path / "docs" / "a.md").resolve()

    class SideWatcher(Watcher):
        def round(self):
            super().round()
            return watching.Round(problems=("counted",), side_files=frozenset({side}))

    with SideWatcher(tmp_path) as watcher:
        side.write_text("second")
        watcher.wait_rounds(2)
        assert "a.md" in watcher.lines[1]


@pytest.mark.django_db
def test_a_broken_round_saves_nothing_names_file_and_line_and_the_last_good_state_is_served(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("good content")
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a", side="docs/a.md"))
    (tmp_path / "b.yaml").write_text(resource_yaml("docs://b"))
    good = watching.import_round(tmp_path, publish=True, note="sync")
    assert good.ok and good.line() == "resources: 2 created; published 2"
    assert good.side_files == {(tmp_path / "docs" / "a.md").resolve()}

    (tmp_path / "docs" / "a.md").write_text("new content, in the same round as a broken file")
    (tmp_path / "b.yaml").write_text(resource_yaml("docs://b") + "    colour: red\n")
    broken = watching.import_round(tmp_path, publish=True, note="sync")
    assert not broken.ok
    assert broken.problems[0].startswith(f"{tmp_path / 'b.yaml'}:6: resources[1] (uri: docs://b): colour:")
    assert "nothing saved" in broken.line() and "b.yaml:6" in broken.line()
    assert Resource.objects.get(uri="docs://a").text == "good content"
    served = catalog_for("production").read_resource(ANYONE, "docs://a")
    assert served.result["contents"][0]["text"] == "good content"


@pytest.mark.django_db
def test_a_folder_imports_every_yaml_file_in_one_transaction(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.yml").write_text(resource_yaml("docs://b"))
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a"))
    report = import_documents(tmp_path, publish=True, note="sync")
    assert report.summary() == "resources: 2 created; published 2"
    assert set(Resource.objects.values_list("uri", flat=True)) == {"docs://a", "docs://b"}


@pytest.mark.django_db
def test_an_entry_defined_in_two_files_of_a_folder_is_refused_naming_both(tmp_path):
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://same"))
    (tmp_path / "b.yaml").write_text(resource_yaml("docs://other") + resource_yaml("docs://same")
                                     .replace("resources:\n", ""))
    with pytest.raises(ImportFailed) as failed:
        import_documents(tmp_path, publish=True, note="sync")
    assert failed.value.problems == [
        f"{tmp_path / 'b.yaml'}:6: resources[2] (uri: docs://same): already defined by "
        f"{tmp_path / 'a.yaml'}:2: resources[1] (uri: docs://same); define each entry in one file."]
    assert not Resource.objects.exists()


@pytest.mark.django_db
def test_an_empty_folder_is_refused_clearly(tmp_path):
    with pytest.raises(ImportFailed, match="holds no YAML file"):
        import_documents(tmp_path)


@pytest.mark.django_db
def test_a_watched_round_moves_protected_labels_as_the_command_line_operator(tmp_path):
    from registry.models import AuditEntry

    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a"))
    assert watching.import_round(tmp_path, publish=True, note="sync").ok
    override = AuditEntry.objects.get(action="override")
    assert (override.label, override.note, override.actor_name) == (
        "production", "command line (operator)", "registry_import")


def test_the_heap_is_settled_after_each_round_is_logged_not_before(tmp_path):
    """The full collection runs off the path from a save to the announcement: once per round,
    after its commit and its log line."""
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a"))
    lines, settled, stop = [], [], threading.Event()

    def run_round():
        if len(lines) == 1:
            stop.set()
        return watching.Round(problems=("counted",), side_files=frozenset())

    thread = threading.Thread(target=watching.watch_imports, kwargs={
        "path": tmp_path, "publish": False, "note": "", "log": lines.append, "stop": stop, "run_round": run_round,
        "after_round": lambda: settled.append(len(lines))})
    thread.start()
    try:
        deadline = time.monotonic() + 10
        while not lines and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.3)  # the native watcher is set up right after the first round
        (tmp_path / "a.yaml").write_text(resource_yaml("docs://a", text="edited"))
        thread.join(10)
    finally:
        stop.set()
        thread.join(10)
    assert len(lines) == 2, lines
    assert settled == [1, 2]  # each time, the round's line was already written


def test_settling_the_heap_freezes_survivors_and_still_collects_what_died_since():
    """Frozen objects are left out of collections; the next settling unfreezes first, so a cycle
    that became garbage after one round (a changed file's old entries) is not kept for good."""

    class Node:
        pass

    node = Node()
    node.self = node  # a cycle: only the cyclic collector frees it
    alive = weakref.ref(node)
    try:
        watching.settle_heap()
        assert gc.get_freeze_count() > 0
        del node
        gc.collect()
        assert alive() is not None  # frozen: not collected meanwhile
        watching.settle_heap()
        assert alive() is None
    finally:
        gc.unfreeze()


def test_the_watch_command_settles_the_heap_after_its_rounds(tmp_path, monkeypatch):
    from django.core.management import call_command

    from registry.management.commands import registry_import

    seen = {}
    monkeypatch.setattr(registry_import, "watch_imports", lambda path, **kwargs: seen.update(kwargs))
    (tmp_path / "a.yaml").write_text(resource_yaml("docs://a"))
    call_command("registry_import", str(tmp_path), watch=True, verbosity=0)
    assert seen["after_round"] is watching.settle_heap
