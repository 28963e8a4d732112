"""Prompts as code: a top-level `snippets:` list, imported before the entries that include it, exported back."""

from __future__ import annotations

import pytest

from registry.models import PromptLabel, Snippet, SnippetLabel
from registry.portable.importer import ImportFailed, export_document, import_documents

pytestmark = pytest.mark.django_db

DOC = """
prompts:
  - name: support-reply
    description: Reply to a customer
    arguments:
      - {name: topic, required: true}
      - {name: tone, type: enum, choices: [warm, formal]}
    messages:
      - role: user
        text: "Answer about {{ topic }}.\\n{{> house-style }}"
snippets:
  - name: house-style
    description: How we write
    tags: [style]
    text: "Be {{ tone }}. {{> signature }}"
    arguments:
      - {name: tone, description: The tone, type: enum}
  - name: signature
    text: "-- The support team"
"""


def write(tmp_path, text: str):
    path = tmp_path / "registry.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_one_file_defines_snippets_and_the_prompt_that_includes_them(tmp_path):
    report = import_documents(write(tmp_path, DOC), publish=True, note="first import")
    assert not [o for o in report.outcomes if o.warnings], [o.warnings for o in report.outcomes]
    snippet = Snippet.objects.get(name="house-style")
    assert snippet.arguments.get().type == "enum" and snippet.tags == "style"
    assert SnippetLabel.objects.filter(entry__name__in=["house-style", "signature"], name="production").count() == 2
    assert PromptLabel.objects.get(entry__name="support-reply", name="production").version.number == 1


def test_snippets_are_exported_and_reimport_unchanged(tmp_path):
    import_documents(write(tmp_path, DOC), publish=True, note="first import")
    exported = export_document()
    house = next(s for s in exported["snippets"] if s["name"] == "house-style")
    assert house["arguments"] == [{"name": "tone", "description": "The tone", "type": "enum"}]
    assert house["labels"] == ["production"]
    from registry.portable.dump import dump_document

    report = import_documents(write(tmp_path, dump_document(exported)), publish=True, note="again")
    assert not report.changed


def test_a_prompt_including_an_unknown_snippet_is_refused_at_import(tmp_path):
    text = DOC.replace("{{> house-style }}", "{{> no-such-style }}")
    with pytest.raises(ImportFailed, match="'no-such-style' does not exist"):
        import_documents(write(tmp_path, text), publish=True, note="first import")


def test_invalid_snippet_entries_get_a_clear_error(tmp_path):
    bad = """
snippets:
  - name: "bad name!"
    text: [not, a, text]
    arguments:
      - {name: tone, type: colour}
    colour: red
"""
    with pytest.raises(ImportFailed) as refused:
        import_documents(write(tmp_path, bad))
    message = str(refused.value)
    assert "snippets[1]" in message and "unknown type 'colour'" in message and "colour" in message


def test_the_demo_data_uses_the_house_style_snippet_in_at_least_two_prompts():
    from pathlib import Path

    from registry.release.uses import used_by

    demo = Path(__file__).resolve().parents[2] / "demo" / "registry.yaml"
    report = import_documents(demo, publish=True, note="Demo data")
    assert not [o.warnings for o in report.outcomes if o.warnings]
    users = {use.key for use in used_by("snippet", "house-style") if use.kind == "prompt"}
    assert len(users) >= 2


def test_a_bulk_import_indexes_who_uses_a_snippet(tmp_path):
    from registry.release.uses import used_by

    import_documents(write(tmp_path, DOC), publish=True, note="first import", bulk=True)
    assert [(u.kind, u.key, u.labels) for u in used_by("snippet", "house-style")] == [
        ("prompt", "support-reply", ["production"])]
