from __future__ import annotations

import base64
from pathlib import Path

import pytest

from registry.portable import FormatError, dump_document, entry_document, load_file, parse_yaml, read_entries
from tests.factories import PNG_1X1

PNG_B64 = base64.b64encode(PNG_1X1).decode()


def entries(text: str, base_dir: Path | None = None):
    return read_entries(parse_yaml(text, "demo.yaml", base_dir))


def problems(text: str, base_dir: Path | None = None) -> list[str]:
    with pytest.raises(FormatError) as caught:
        entries(text, base_dir)
    return caught.value.problems


def test_a_prompt_becomes_draft_data_with_defaults_for_left_out_fields():
    [spec] = entries("""
prompts:
  - name: greet
    arguments: [{name: who, required: true, suggestions: [world]}]
    messages:
      - text: Hello {{ who }}
""")
    assert spec.kind == "prompt" and spec.key == "greet" and spec.labels == ["production"]
    assert spec.data == {
        "name": "greet", "title": "", "description": "", "tags": [],
        "arguments": [{"name": "who", "title": "", "description": "", "required": True, "default": "",
                       "suggestions": ["world"]}],
        "messages": [{"role": "user", "kind": "text", "text": "Hello {{ who }}"}],
    }


def test_malformed_yaml_names_line_and_column():
    [problem] = problems("prompts:\n  - name: a\n    messages: [\n")
    assert problem.startswith("demo.yaml:4:1: malformed YAML")


def test_unknown_key_names_file_line_entry_and_field_and_suggests_the_right_one():
    found = problems("""
prompts:
  - name: ok
    messages: [{text: hi}]
  - name: code-review
    descripton: typo
    messages: [{text: hi}]
""")
    assert found == [("demo.yaml:6: prompts[2] (name: code-review): descripton: unknown key 'descripton'. "
                     "Did you mean 'description'?")]


def test_nested_problems_name_the_field_path_with_one_based_indexes():
    found = problems("""
prompts:
  - name: p
    arguments:
      - {name: "bad name"}
    messages:
      - {role: system, text: hi}
      - {text: hi, image: {mime_type: image/png, base64: "%%%"}}
""")
    assert any("prompts[1] (name: p): arguments[1].name: An argument name starts" in p for p in found)
    assert any("prompts[1] (name: p): messages[1].role: the role must be user or assistant" in p for p in found)
    assert any("messages[2]: give exactly one of" in p for p in found)


def test_duplicate_keys_and_duplicate_entries_are_errors():
    found = problems("""
resources:
  - uri: docs://a
    name: a
    name: b
  - {uri: docs://a, name: again}
""")
    assert any(p.startswith("demo.yaml:5: resources[1] (uri: docs://a): name: the key appears twice") for p in found)
    assert any("resources[2] (uri: docs://a): uri: already defined by resources[1]" in p for p in found)


def test_placeholder_syntax_problems_are_kept_as_warnings_with_their_place():
    [spec] = entries("prompts:\n  - name: p\n    messages:\n      - text: |\n          one\n          {{ two\n")
    assert spec.warnings == [("demo.yaml:4: prompts[1] (name: p): messages[1].text: "
                             "Line 2: '{{' is never closed with '}}' on the same line.")]


def test_side_files_are_read_relative_to_the_yaml_file_as_text_or_bytes(tmp_path):
    (tmp_path / "guide.md").write_text("# Guide\n")
    (tmp_path / "logo.png").write_bytes(PNG_1X1)
    (tmp_path / "demo.yaml").write_text("""
resources:
  - {uri: docs://guide, name: guide, mime_type: text/markdown, file: guide.md}
  - {uri: docs://logo, name: logo, mime_type: image/png, file: logo.png}
prompts:
  - name: p
    messages: [{image: {mime_type: image/png, file: logo.png}}]
""")
    specs = {s.key: s.data for s in read_entries(load_file(tmp_path / "demo.yaml"))}
    assert (specs["docs://guide"]["text"], specs["docs://guide"]["data"]) == ("# Guide\n", None)
    assert specs["docs://logo"]["data"] == PNG_1X1
    assert specs["p"]["messages"][0]["data"] == PNG_1X1


def test_side_files_outside_the_yaml_folder_are_refused(tmp_path):
    (tmp_path / "inner").mkdir()
    found = problems("resources:\n  - {uri: docs://x, name: x, file: ../secret.txt}\n", tmp_path / "inner")
    assert "resources[1] (uri: docs://x): file: '../secret.txt' must be a path inside" in found[0]


def test_from_reference_is_recorded_and_excludes_inline_content():
    [spec] = entries("prompts:\n  - name: p\n    messages: [{resource: {from: 'docs://guide'}}]\n")
    assert spec.data["messages"] == [{"role": "user", "kind": "resource", "resource_uri": "docs://guide"}]
    assert spec.references[0][0] == "docs://guide"
    found = problems("prompts:\n  - name: p\n    messages: [{resource: {from: 'docs://guide', text: x}}]\n")
    assert "remove text" in found[0]


def test_top_level_typos_and_wrong_types_are_errors():
    found = problems("prompt:\n  - name: p\nresources: {uri: docs://x}\n")
    assert any("prompt: unknown key 'prompt'. Did you mean 'prompts'?" in p for p in found)
    assert any("resources: expected a list" in p for p in found)


def test_dumped_documents_read_back_to_the_same_draft_data():
    data = {
        "name": "p", "title": "", "description": "Multi\nline\n", "tags": ["a"],
        "arguments": [{"name": "x", "title": "", "description": "", "required": False, "default": "d",
                       "suggestions": ["one", "two"]}],
        "messages": [
            {"role": "user", "kind": "text", "text": "  leading spaces {{ x }}\ntrailing  \n"},
            {"role": "user", "kind": "image", "mime_type": "image/png", "data": PNG_1X1},
            {"role": "user", "kind": "resource", "uri": "docs://x", "mime_type": "", "text": "", "data": b"\x00\x01"},
            {"role": "assistant", "kind": "resource_link", "resource_uri": "docs://y", "link_name": "why"},
        ],
    }
    resource = {"uri": "docs://r", "name": "r", "title": "", "description": "", "mime_type": "text/plain",
                "tags": [], "audience": "user,assistant", "priority": 0.5, "text": "yes: no\n", "data": None}
    text = dump_document({"prompts": [entry_document("prompt", data, released={"production": 2})],
                          "resources": [entry_document("resource", resource)]})
    prompt_spec, resource_spec = sorted(entries(text), key=lambda s: s.kind)
    assert prompt_spec.data == data
    assert resource_spec.data == resource


def test_inline_text_over_the_upload_limit_is_refused_at_import_with_its_size(settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_UPLOAD_BYTES": 10}
    found = problems("""
resources:
  - {uri: docs://long, name: long, text: "twelve bytes"}
""")
    assert any("text: the content is 12 bytes; the limit is 10 bytes." in p for p in found)
