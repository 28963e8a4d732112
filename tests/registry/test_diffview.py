"""The readable diff: form order and labels, words instead of null/True, tables, chat bubbles, word diffs."""

from __future__ import annotations

import hashlib

from registry.admin.diff.changes import NOT_SET, EntryDiff, Section, Segment
from registry.admin.diff.recorded import change_summary, from_changes
from registry.admin.diff.sections import build
from registry.admin.diff.values import field_label
from registry.admin.diff.words import word_diff
from registry.admin.forms.prompts import PromptArgumentForm, PromptForm
from registry.admin.forms.resources import ResourceForm
from registry.authoring.snapshots import diff_snapshots

BEFORE = {
    "name": "review",
    "description": "Reviews code",
    "arguments": [{"name": "language", "required": True}, {"name": "tone", "required": False, "default": "calm"}],
    "messages": [
        {"role": "user", "content": {"type": "text", "text": "Review this {{ language }} change.\nBe brief."}},
        {"role": "assistant", "content": {"type": "text", "text": "Paste it."}},
    ],
}
AFTER = {
    "name": "review",
    "title": "Code review",
    "description": "Reviews code",
    "arguments": [{"name": "language", "required": False, "default": "python"}, {"name": "focus", "required": True}],
    "messages": [
        {"role": "user",
         "content": {"type": "text", "text": "Review this {{ language }} change carefully.\nBe brief."}},
        {"role": "assistant", "content": {"type": "text", "text": "Paste it."}},
        {"role": "user", "content": {"type": "image", "mimeType": "image/png",
                                     "sha256": hashlib.sha256(b"\x89PNG-bytes").hexdigest(), "size": 10}},
    ],
}


def _sections(diff: EntryDiff) -> dict[str, Section]:
    return {section.title or section.kind: section for section in diff.sections}


def test_fields_come_in_form_order_with_the_form_labels_and_words_for_nothing():
    before = {"uri": "docs://a", "name": "a", "text": "x", "mimeType": "text/plain", "size": 1}
    after = {"uri": "docs://a", "name": "b", "title": "A", "text": "y", "size": 1,
             "annotations": {"priority": 0.5, "audience": ["user", "assistant"]}}
    [section] = build("resource", before, after).sections
    labels = [change.label for change in section.fields]
    form = ResourceForm.base_fields
    assert labels == [form["name"].label, form["title"].label, form["mime_type"].label, form["text"].label,
                      form["audience"].label, form["priority"].label]
    by_label = {change.label: change for change in section.fields}
    assert by_label["Title"].before == NOT_SET and by_label["Title"].status == "added"
    assert by_label[form["mime_type"].label].after.missing and by_label[form["mime_type"].label].status == "removed"
    assert by_label["Audience"].after.text == "User and assistant"


def test_booleans_read_yes_and_no_and_arguments_form_a_table_with_changed_cells_marked():
    diff = build("prompt", BEFORE, AFTER)
    table = _sections(diff)["Arguments"].table
    assert table.columns == [PromptArgumentForm.base_fields[name].label
                             for name in ("name", "title", "description", "required", "default", "suggestions")]
    rows = {row.title: row for row in table.rows}
    assert (rows["language"].status, rows["focus"].status, rows["tone"].status) == ("changed", "added", "removed")
    required, default = rows["language"].cells[3], rows["language"].cells[4]
    assert (required.changed, required.before.text, required.after.text) == (True, "Yes", "No")
    assert (default.changed, default.before.missing, default.after.text) == (True, True, "python")
    assert not rows["language"].cells[0].changed


def test_messages_are_bubbles_with_role_and_a_word_level_diff_and_files_are_summarised():
    messages = _sections(build("prompt", BEFORE, AFTER))["Messages"].messages
    assert [(m.number, m.status) for m in messages] == [(1, "changed"), (3, "added")]  # message 2 is unchanged
    first, image = messages
    assert (first.role.text, first.role_key) == ("User", "user")
    assert Segment("ins", " carefully") in first.words
    assert "".join(s.text for s in first.words if s.op != "ins") == BEFORE["messages"][0]["content"]["text"]
    file_field = next(f for f in image.fields if f.key == "content")
    digest = hashlib.sha256(b"\x89PNG-bytes").hexdigest()[:12]
    assert file_field.after.text == f"image/png · 10 bytes · sha256 {digest}"
    assert image.kind.text == "Image"


def test_a_long_text_is_word_diffed_and_long_unchanged_stretches_are_folded():
    old = "Intro line\n" + "".join(f"line {n}\n" for n in range(30)) + "The quick fox.\n"
    new = "Intro line\n" + "".join(f"line {n}\n" for n in range(30)) + "The slow fox.\n"
    [section] = build("template", {"body": old}, {"body": new}).sections
    [change] = section.fields
    ops = [segment.op for segment in change.words]
    assert ops == ["gap", "same", "del", "ins", "same"]
    assert change.words[0].text == "… 29 unchanged lines …"
    assert change.words[1].text == "line 28\nline 29\nThe "  # two lines of context before the change
    assert (change.words[2].text, change.words[3].text) == ("quick", "slow")


def test_a_changed_word_and_its_neighbour_read_as_one_replacement():
    assert word_diff("the quick brown fox", "a slow brown fox") == [
        Segment("del", "the quick"), Segment("ins", "a slow"), Segment("same", " brown fox")]


def test_unknown_keys_are_shown_generically_after_the_known_ones_and_hash_references_are_summarised():
    before = {"uri": "docs://a", "name": "a", "blob": {"sha256": "ab" * 32, "size": 2048}}
    after = {"uri": "docs://a", "name": "a", "blob": {"sha256": "cd" * 32, "size": 4096},
             "tags": ["support", "billing"], "icons": [{"src": "x.png"}], "_meta": {"owner": "team"}}
    sections = build("resource", before, after).sections
    assert [s.title for s in sections] == ["", "Other fields"]
    known = {change.label: change for change in sections[0].fields}
    assert known[ResourceForm.base_fields["upload"].label].after.text == f"4,096 bytes · sha256 {'cd' * 6}"
    assert known["Tags"].after.text == "support, billing"
    assert [change.key for change in sections[1].fields] == ["icons", "_meta.owner"]


def test_nothing_before_is_said_once_and_identical_snapshots_have_no_differences():
    new = build("prompt", None, AFTER)
    assert new.all_new and new.summary() == "New: name, title, description, 2 arguments and 3 messages"
    assert build("prompt", AFTER, AFTER).empty


def test_recorded_audit_changes_give_the_same_reading_and_a_one_line_summary():
    changes = diff_snapshots(BEFORE, AFTER)
    diff = from_changes("prompt", changes)
    assert diff.partial
    assert change_summary("prompt", changes) == (
        "Title added; Argument 1 required and default changed; Argument 2 name, required and default changed; "
        "Message 1 text changed; and 1 more")
    messages = _sections(diff)["Messages"].messages
    assert [(m.number, m.status) for m in messages] == [(1, "changed"), (3, "added")]
    assert Segment("ins", " carefully") in messages[0].words
    unknown = _sections(diff)["Arguments"].table.rows[0].cells[1]
    assert unknown.before is None and unknown.after is None  # not recorded: neither "not set" nor a guess


def test_an_audit_summary_of_a_stored_binary_summary_and_a_label_flag():
    changes = [{"field": "blob", "before": "<10 bytes, sha256 0123456789abcdef>", "after": None},
               {"field": "protected", "before": False, "after": True}]
    diff = from_changes("resource", changes)
    fields = [change for section in diff.sections for change in section.fields]
    assert [(c.label, c.before.text, c.after.text) for c in fields] == [
        (ResourceForm.base_fields["upload"].label, "10 bytes · sha256 0123456789ab", ""), ("Protected", "No", "Yes")]
    assert change_summary("resource", changes) == "File removed; Protected changed"
    assert change_summary("prompt", []) == ""


def test_form_labels_are_those_of_the_prompt_form():
    assert field_label("prompt", "description") == PromptForm.base_fields["description"].label
    assert field_label("prompt", "someNewKey") == "Some new key"
