"""One schema of a snapshot per kind: every key a real snapshot carries is in it and shows in the diff.

The snapshots are built by the real snapshot code from real entries with every field set
(tests.factories.make_complete_entries). Each key is changed (and removed) in turn, and the diff of
the two snapshots (as the compare and review pages build it, and as the audit log records it)
must name that key's field: a field the schema lacks, or one the diff ignores, fails here.
"""

from __future__ import annotations

import copy
import hashlib
import re
from typing import Any

import pytest
from django.utils.translation import gettext

from registry.admin.diff.changes import EntryDiff
from registry.admin.diff.recorded import change_summary
from registry.admin.diff.sections import build
from registry.admin.schema_labels import binary_label, label_text
from registry.authoring import listing
from registry.authoring.schema import DOCUMENT, SCHEMAS, leaf_paths, schema_of
from registry.authoring.snapshots import diff_loader, diff_snapshots, snapshot_of
from registry.portable import format as portable
from tests.factories import make_complete_entries

pytestmark = pytest.mark.django_db

_STEP = re.compile(r"([^.\[\]]+)(?:\[(\d+)\])?")


def _steps(path: str) -> list[Any]:
    steps: list[Any] = []
    for match in _STEP.finditer(path):
        steps.append(match.group(1))
        if match.group(2) is not None:
            steps.append(int(match.group(2)) - 1)
    return steps


def _changed(snapshot: dict, path: str, value: Any = ..., *, remove: bool = False) -> dict:
    out = copy.deepcopy(snapshot)
    *parents, last = _steps(path)
    node = out
    for step in parents:
        node = node[step]
    if remove:
        del node[last]
    else:
        node[last] = value
    return out


def _other(path: str, value: Any) -> Any:
    """A different value of the same shape, as an edit would give."""
    leaf = path.rsplit(".", 1)[-1]
    if leaf == "sha256":
        return hashlib.sha256(value.encode()).hexdigest()
    if leaf == "encoding":
        return "base64" if value == "text" else "text"
    if leaf == "role":
        return "assistant" if value == "user" else "user"
    if leaf == "type":
        if path.startswith("messages") and value != "image":
            return "image"
        return "string" if value != "string" else "enum"
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value / 2
    if isinstance(value, list):
        return [*value, "extra"]
    return f"{value} (edited)"


def _labels(kind: str, path: str) -> set[str]:
    field = schema_of(kind).covered(path)
    assert field is not None
    labels = {label_text(field).lower()}
    if field.shows == DOCUMENT:
        labels.add(binary_label(field).lower())
    table = schema_of(kind).table(path.partition("[")[0])
    if table is not None and path.endswith(f"].{table.identity}"):  # a renamed row is one removed, one added
        labels.add(gettext(table.singular).lower())
    return labels


def _said(diff: EntryDiff) -> str:
    return "; ".join(diff.summary_items()).lower()


def _real_snapshots() -> list[tuple[str, dict]]:
    entries = make_complete_entries()
    return [(kind, snapshot_of(entry)) for kind, rows in entries.items() for entry in rows]


def test_every_key_of_every_real_snapshot_has_a_field_in_its_kinds_schema():
    for kind, snapshot in _real_snapshots():
        schema = schema_of(kind)
        missing = [path for path, _value in leaf_paths(snapshot) if schema.covered(path) is None]
        assert not missing, f"{kind} snapshots carry keys its schema does not name: {missing}"


def test_the_complete_entries_set_every_field_of_every_schema():
    """So the walk below leaves no field of a schema untried."""
    used: dict[str, set[int]] = {kind: set() for kind in SCHEMAS}
    for kind, snapshot in _real_snapshots():
        for path, _value in leaf_paths(snapshot):
            used[kind].add(id(schema_of(kind).covered(path)))
    for kind, schema in SCHEMAS.items():
        fields = list(schema.fields) + [c for t in schema.tables for c in t.columns]
        fields += list(schema.messages.fields) if schema.messages else []
        unused = [f.key or "(document)" for f in fields if id(f) not in used[kind]]
        assert not unused, f"no {kind} built by make_complete_entries sets {unused}"


@pytest.mark.parametrize("remove", [False, True], ids=["changed", "removed"])
def test_a_change_of_any_snapshot_key_shows_in_the_diff_under_its_own_field(remove):
    for kind, snapshot in _real_snapshots():
        for path, value in leaf_paths(snapshot):
            after = _changed(snapshot, path, None if remove else _other(path, value), remove=remove)
            for load in (None, diff_loader()):
                diff = build(kind, snapshot, after, load=load)
                said = _said(diff)
                assert not diff.empty, f"{kind} {path}: 'No differences' for a changed snapshot"
                assert "Other fields" not in [s.title for s in diff.sections], f"{kind} {path} shown as unknown"
                assert any(label in said for label in _labels(kind, path)), f"{kind} {path}: the diff says {said!r}"


def test_a_change_of_any_snapshot_key_shows_in_the_audit_log_record_of_it():
    for kind, snapshot in _real_snapshots():
        for path, value in leaf_paths(snapshot):
            changes = diff_snapshots(snapshot, _changed(snapshot, path, _other(path, value)))
            said = change_summary(kind, changes).lower()
            assert changes and said != "no changes", f"{kind} {path}: nothing recorded"
            assert any(label in said for label in _labels(kind, path)), f"{kind} {path}: the audit says {said!r}"


def test_lists_carry_the_keys_the_schema_marks_listed():
    for kind, snapshot in _real_snapshots():
        item = listing.listing_of(kind, snapshot)["item"]
        expected = [key for key in schema_of(kind).listed if snapshot.get(key) not in (None, "", [], {})]
        assert [key for key in item if key != "arguments"] == expected
        for table in schema_of(kind).tables:
            if table.listed:
                assert all(set(row) <= set(table.listed) for row in item[table.key])


def test_the_portable_format_accepts_exactly_the_keys_of_the_schema():
    assert schema_of("prompt").portable_keys() == portable.PROMPT_KEYS
    assert schema_of("resource").portable_keys() == portable.RESOURCE_KEYS
    assert schema_of("template").portable_keys() == portable.TEMPLATE_KEYS
    assert tuple(k for c in schema_of("prompt").table("arguments").columns
                 for k in c.portable) == portable.ARGUMENT_KEYS
    assert tuple(k for c in schema_of("template").table("variables").columns
                 for k in c.portable) == portable.VARIABLE_KEYS


def test_every_field_survives_export_and_import(tmp_path):
    from registry.portable.importer import export_yaml, import_documents

    hashes = {(kind, entry.pk): snapshot_of(entry) for kind, rows in make_complete_entries().items() for entry in rows}
    path = tmp_path / "export.yaml"
    path.write_text(export_yaml(), encoding="utf-8")
    report = import_documents(path, publish=False)
    assert not report.changed, [(o.key, o.changes) for o in report.outcomes if o.changed]
    from registry.kinds import KINDS

    for (kind, pk), before in hashes.items():
        assert snapshot_of(KINDS[kind].entry_model.objects.get(pk=pk)) == before
