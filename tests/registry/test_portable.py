from __future__ import annotations

import base64
from pathlib import Path

import pytest

from registry.portable.check import read_entries
from registry.portable.dump import dump_document, entry_document
from registry.portable.format import MAX_NESTING, FormatError
from registry.portable.parse import load_file, parse_yaml
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
        "name": "greet", "title": "", "description": "", "folder": "", "tags": [],
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
        "name": "p", "title": "", "description": "Multi\nline\n", "folder": "support/billing",
        "tags": ["a"],
        "arguments": [{"name": "x", "title": "", "description": "", "required": False, "default": "d",
                       "suggestions": ["one", "two"]}],
        "messages": [
            {"role": "user", "kind": "text", "text": "  leading spaces {{ x }}\ntrailing  \n"},
            {"role": "user", "kind": "image", "mime_type": "image/png", "data": PNG_1X1},
            {"role": "user", "kind": "resource", "uri": "docs://x", "mime_type": "", "text": "", "data": b"\x00\x01"},
            {"role": "assistant", "kind": "resource_link", "resource_uri": "docs://y", "link_name": "why"},
        ],
    }
    resource = {"uri": "docs://r", "name": "r", "title": "", "description": "", "folder": "", "mime_type": "text/plain",
                "tags": [], "audience": "user,assistant", "priority": 0.5, "text": "yes: no\n", "data": None}
    text = dump_document({"prompts": [entry_document("prompt", data, released={"production": 2})],
                          "resources": [entry_document("resource", resource)]})
    prompt_spec, resource_spec = sorted(entries(text), key=lambda s: s.kind)
    assert prompt_spec.data == data
    assert resource_spec.data == resource


# ------------------------------------------------------------------ hostile documents
# Six levels expand to half a million strings (two more: 43 million, gigabytes of memory).
ALIAS_BOMB = """\
a: &a ["x","x","x","x","x","x","x","x","x"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
prompts: [*f]
"""


def test_an_alias_bomb_is_refused_before_it_expands_naming_the_line_and_its_anchor():
    with pytest.raises(FormatError) as caught:
        parse_yaml(ALIAS_BOMB, "bomb.yaml")
    [problem] = caught.value.problems
    assert problem.startswith("bomb.yaml:2: YAML aliases are not supported: *a")
    assert "anchor &a is on line 1" in problem


def test_a_self_referencing_alias_is_a_format_error_not_a_recursion_error():
    with pytest.raises(FormatError) as caught:
        parse_yaml("prompts: &a [*a]\n", "loop.yaml")
    assert caught.value.problems[0].startswith("loop.yaml:1: YAML aliases are not supported: *a")


def test_a_merge_key_alias_is_refused_too():
    text = "base: &base {role: user}\nprompts:\n  - <<: *base\n    name: x\n"
    with pytest.raises(FormatError) as caught:
        parse_yaml(text, "merge.yaml")
    assert caught.value.problems[0].startswith("merge.yaml:3: YAML aliases are not supported")


def test_an_anchor_nobody_refers_to_is_harmless():
    [spec] = entries("prompts:\n  - &p\n    name: greet\n    messages: [{text: hi}]\n")
    assert spec.key == "greet"


@pytest.mark.parametrize("opening, closing", [("[", "]"), ("{a: ", "}")])
def test_deep_nesting_is_a_format_error_naming_the_line_not_a_recursion_error(opening, closing):
    text = "prompts:\n  - " + opening * 100_000 + closing * 100_000 + "\n"
    with pytest.raises(FormatError) as caught:
        parse_yaml(text, "deep.yaml")
    assert caught.value.problems == [f"deep.yaml:2: lists and mappings are nested more than {MAX_NESTING} levels deep."]


def test_nesting_up_to_the_limit_parses():
    depth = MAX_NESTING - 1  # the top-level mapping is one level
    loaded = parse_yaml("x: " + "[" * depth + "]" * depth + "\n", "ok.yaml")
    value = loaded.data["x"]
    for _ in range(depth - 1):
        value = value[0]
    assert value == []


def test_a_lone_surrogate_escape_is_a_format_error_naming_the_line():
    text = 'prompts:\n  - name: greet\n    messages: [{text: "bad \\ud800 text"}]\n'
    with pytest.raises(FormatError) as caught:
        parse_yaml(text, "s.yaml")
    [problem] = caught.value.problems
    assert problem.startswith("s.yaml:3: the text contains a UTF-16 surrogate escape")


def test_an_escaped_surrogate_pair_is_refused_with_the_escape_that_works():
    with pytest.raises(FormatError) as caught:
        parse_yaml('x: "smile \\ud83d\\ude00"\n', "s.yaml")
    assert "\\U0001F600" in caught.value.problems[0]
    [spec] = entries('prompts:\n  - name: greet\n    messages: [{text: "smile \\U0001F600"}]\n')
    assert spec.data["messages"][0]["text"] == "smile \U0001F600"


def test_a_document_over_the_size_limit_is_refused_before_parsing(settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_IMPORT_BYTES": 1000}
    with pytest.raises(FormatError) as caught:
        parse_yaml("x: " + "y" * 1000 + "\n", "big.yaml")
    assert caught.value.problems == ["big.yaml: the file is larger than 1,000 bytes."]


def test_a_file_over_the_size_limit_is_refused_without_reading_it(settings, tmp_path):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_IMPORT_BYTES": 1000}
    path = tmp_path / "big.yaml"
    path.write_text("x: " + "y" * 1000 + "\n")
    with pytest.raises(FormatError) as caught:
        load_file(path)
    assert caught.value.problems == [f"{path}: the file is larger than 1,000 bytes."]


TYPED_DOC = """
prompts:
  - name: reply
    description: Reply to a customer
    arguments:
      - {name: tone, description: Tone of the reply, required: true, type: enum, choices: [formal, warm]}
      - {name: count, type: integer, min: 1, max: 10, default: 5}
      - {name: ratio, type: number, min: 0.5}
      - {name: flag, type: boolean, default: true}
      - {name: code, type: string, min_length: 3, max_length: 8, pattern: "[A-Z]+-[0-9]+"}
      - {name: doc, type: resource}
    messages:
      - text: "{{ tone }} {{ count }} {{ ratio }} {{ flag }} {{ code }} {{ doc }}"
"""


def test_typed_arguments_read_into_draft_data():
    [spec] = entries(TYPED_DOC)
    args = {a["name"]: a for a in spec.data["arguments"]}
    assert args["tone"]["type"] == "enum" and args["tone"]["choices"] == ["formal", "warm"]
    assert (args["count"]["minimum"], args["count"]["maximum"], args["count"]["default"]) == (1, 10, "5")
    assert args["ratio"]["minimum"] == 0.5 and "maximum" not in args["ratio"]
    assert args["flag"]["default"] == "true"
    assert (args["code"]["min_length"], args["code"]["max_length"], args["code"]["pattern"]) == (3, 8, "[A-Z]+-[0-9]+")
    assert args["doc"]["type"] == "resource"


def test_bad_typed_declarations_name_file_line_and_argument():
    found = problems("""
prompts:
  - name: reply
    arguments:
      - {name: a, type: enum}
      - {name: b, type: integer, min: 1.5, pattern: x}
      - {name: c, type: colour}
      - {name: d, type: integer, min: ten, min_length: -1}
      - {name: e, pattern: "(a)\\\\1"}
      - {name: f, type: number, min: 3, max: 1, default: 0}
      - {name: g, type: enum, choices: ["two\\nlines"], max_length: 2147483648}
    messages:
      - text: "{{ a }} {{ b }} {{ c }} {{ d }} {{ e }} {{ f }} {{ g }}"
""")
    assert "demo.yaml:5: prompts[1] (name: reply): arguments[1]: an argument of type enum needs at least one choice." \
        in found
    assert any(p.startswith("demo.yaml:6:") and "a pattern applies only to text arguments" in p for p in found)
    assert any(p.startswith("demo.yaml:6:") and "must be a whole number, not 1.5" in p for p in found)
    assert any("arguments[3].type: unknown type 'colour'" in p for p in found)
    assert any("arguments[4].min: expected a number, got a string" in p for p in found)
    assert any("arguments[4].min_length: expected a whole number of characters" in p for p in found)
    assert any("arguments[5]: the pattern '(a)\\\\1' cannot be used" in p for p in found)
    assert any("arguments[6]: the minimum 3 is larger than the maximum 1." in p for p in found)
    assert any("arguments[7].choices[1]: a choice must be a single, non-empty line." in p for p in found)
    assert any("arguments[7].max_length: expected a whole number of characters (0 or more), got 2147483648." in p
               for p in found)


def test_typed_arguments_dump_in_the_file_words_and_read_back_the_same():
    [spec] = entries(TYPED_DOC)
    document = entry_document("prompt", spec.data)
    args = {a["name"]: a for a in document["arguments"]}
    assert args["tone"] == {"name": "tone", "description": "Tone of the reply", "required": True, "type": "enum",
                            "choices": ["formal", "warm"]}
    assert args["count"] == {"name": "count", "required": False, "default": "5", "type": "integer", "min": 1, "max": 10}
    [again] = entries(dump_document({"prompts": [document]}))
    assert again.data == spec.data


def test_untyped_arguments_dump_without_type_keys():
    [spec] = entries("""
prompts:
  - name: greet
    arguments: [{name: who, required: true}]
    messages: [{text: "Hello {{ who }}"}]
""")
    assert entry_document("prompt", spec.data)["arguments"] == [{"name": "who", "required": True}]


def test_inline_text_over_the_upload_limit_is_refused_at_import_with_its_size(settings):
    settings.REGISTRY = {**settings.REGISTRY, "MAX_UPLOAD_BYTES": 10}
    found = problems("""
resources:
  - {uri: docs://long, name: long, text: "twelve bytes"}
""")
    assert any("text: the content is 12 bytes; the limit is 10 bytes." in p for p in found)


# ------------------------------------------------------------------ writing
def _writer_document() -> dict:
    def prompt(i: int, text: str) -> dict:
        return entry_document("prompt", {
            "name": f"p{i:03d}", "title": "", "description": "Long words " * 20 + f"number {i}", "tags": ["a", "b"],
            "arguments": [{"name": "x", "title": "", "description": "", "required": False, "default": "d",
                           "suggestions": ["one", "two"] * 30}],
            "messages": [{"role": "user", "kind": "text", "text": text}],
        }, labels=["production"], released={"production": 1})
    plain = [prompt(i, f"  leading spaces {{{{ x }}}}\n- not a list\nkey: |\ntrailing  \n\n{i}") for i in range(40)]
    odd = [prompt(40, "emoji 😀 and a tab\tand é"), prompt(41, "a carriage return\r\nand \x85 and \x07")]
    resources = [entry_document("resource", {"uri": "docs://r", "name": "r", "title": "", "description": "",
                                             "mime_type": "text/plain", "tags": [], "audience": "user,assistant",
                                             "priority": 0.5, "text": "yes: no\n", "data": None})]
    return {"prompts": plain[:20] + odd + plain[20:], "resources": resources}


def test_libyaml_writes_exactly_the_text_the_python_writer_writes(monkeypatch):
    from registry.portable import dump

    if dump.FAST_DUMPER is None:
        pytest.skip("PyYAML was built without libyaml")
    document = _writer_document()
    fast = dump_document(document, header="# header\n")
    monkeypatch.setattr(dump, "FAST_DUMPER", None)
    assert fast == dump_document(document, header="# header\n")
    assert fast.startswith("# header\nprompts:\n- name: p000\n")
    assert dump.yaml.safe_load(fast) == document


def test_export_writes_runs_of_entries_with_libyaml_and_only_escaping_ones_one_by_one(monkeypatch):
    from registry.portable import dump

    if dump.FAST_DUMPER is None:
        pytest.skip("PyYAML was built without libyaml")
    calls: list[tuple[str, int]] = []
    real = dump._dump

    def spy(data, dumper):
        calls.append(("python" if dumper is dump._Dumper else "libyaml", len(data)))
        return real(data, dumper)

    monkeypatch.setattr(dump, "_dump", spy)
    dump_document(_writer_document())
    assert calls == [("libyaml", 20), ("python", 1), ("python", 1), ("libyaml", 20), ("libyaml", 1)]


# ------------------------------------------------------------------ reading in one pass
ONE_PASS_DOCUMENTS = [
    "",
    "# only a comment\n",
    "---\n",
    "prompts: []\n",
    "just a scalar\n",
    "- a\n- [b, {c: d}]\n",
    """prompts:
  - name: p
    description: 'quoted: yes'
    tags: [a, "b", 'c']
    arguments:
      - {name: n, required: true, default: 5, min: 1.5, max: .inf, suggestions: [yes, no, null, ~, 0x1F, 1_000]}
    messages:
      - role: user
        text: |
          Block {{ n }}
            indented
      - {role: assistant, text: >
          folded
          text}
    when: 2024-01-02
    at: 2024-01-02T03:04:05Z
    blob: !!binary aGVsbG8=
    forced: !!str 12
    empty:
    dup: 1
    dup: 2
    nested: {dup: {a: 1}, dup: {b: 2}}
""",
    "a: &anchor 1\nb: 2\n",  # an anchor without an alias is harmless
    "base: {x: 1}\nmerged: {<<: {y: 2}, z: 3}\n",  # a merge key: composed the old way
    "1: one\ntrue: two\n",  # keys that are not strings: composed the old way
    "? [a, b]\n: c\n",  # a collection as a key: composed the old way
    "!custom x\n",  # an unknown tag: the composer's error
    "a: 1\n---\nb: 2\n",  # two documents: the composer's error
    "a: [1, 2\n",  # malformed: the composer's error
]


@pytest.mark.parametrize("text", ONE_PASS_DOCUMENTS)
def test_reading_from_the_check_pass_gives_the_data_lines_and_problems_composing_gives(text, monkeypatch):
    from registry.portable import parse

    def outcome() -> tuple:
        try:
            loaded = parse_yaml(text, "demo.yaml")
        except Exception as exc:  # the error itself is compared
            return ("error", type(exc).__name__, str(exc))
        return (repr(loaded.data), loaded.lines, loaded.problems)

    one_pass = outcome()

    class Composing(parse.EventBuilder):
        def feed(self, event):
            self.ok = False

    monkeypatch.setattr(parse, "EventBuilder", Composing)
    assert one_pass == outcome()


def test_an_export_is_read_in_the_check_pass_without_composing(monkeypatch):
    from registry.portable import parse

    document, real_compose = _writer_document(), parse._compose
    text = dump_document(document)
    composed = []
    monkeypatch.setattr(parse, "_compose", lambda *args: composed.append(args) or real_compose(*args))
    loaded = parse_yaml(text, "export.yaml")
    assert loaded.data == document and composed == []

    class Composing(parse.EventBuilder):
        def feed(self, event):
            self.ok = False

    monkeypatch.setattr(parse, "EventBuilder", Composing)
    assert parse_yaml(text, "export.yaml").lines == loaded.lines and len(composed) == 1


@pytest.mark.parametrize("text", ["Wait\x85what", "two\nlines\x85and a next-line", "\x85"])
def test_a_next_line_character_survives_export_and_import(text):
    """U+0085 (NEL, cp1252's ellipsis byte read as Latin-1) is a YAML line break: written plain,
    single-quoted or as a block it comes back as a space or a newline, so it is written escaped."""
    document = {"prompts": [entry_document("prompt", {
        "name": "nel", "title": "", "description": text, "tags": [], "arguments": [],
        "messages": [{"role": "user", "kind": "text", "text": text}]})]}
    again = parse_yaml(dump_document(document)).data
    assert again == document
