"""The prompts-as-code YAML format: parse, check and dump. No database access here.

One file holds four optional top-level lists; every other top-level key is an error::

    snippets:                              # shared text the other entries include; imported first
      - name: house-style                  # required; texts include it by {{> house-style }} (or @3 for v3)
        description: How we write          # optional
        folder, tags, labels               # optional, as for prompts
        text: "Be {{ tone }}. ..."         # required; may include other snippets, five levels deep at most
        arguments:                         # the placeholders the text uses: the including prompt must
          - {name: tone, description: ..., type: enum}   # declare each, of the same type
    prompts:
      - name: code-review                  # required; the MCP prompt name
        title: Code review                 # optional
        description: Review a diff ...     # optional, but clients show it
        folder: engineering/review         # optional; where editors find it (clients are not shown it)
        tags: [engineering, review]        # optional
        labels: [production, staging]      # labels to point at the version --publish makes (default [production])
        arguments:
          - name: language                 # required
            title: Language                # optional
            description: ...               # optional
            required: true                 # optional, default false (as in MCP)
            default: python                # optional; used when an optional argument is not given
            suggestions: [python, go]      # optional; offered by completion/complete
            type: enum                     # optional: text (default), string, enum, integer, number,
                                           #   boolean, resource; values are checked on prompts/get
            choices: [python, go, rust]    # enum: the allowed values
            # text/string: min_length, max_length, pattern (the whole value must match; RE2 syntax)
            # integer/number: min, max
        messages:                          # required; role defaults to user; ONE content key each:
          - {role: user, text: "Review this {{ language }} diff"}
          - {role: user, image: {mime_type: image/png, base64: iVBOR...}}        # or file: logo.png
          - {role: user, audio: {mime_type: audio/wav, file: hello.wav}}
          - {role: user, resource: {uri: "docs://x", mime_type: text/plain, text: ...}}  # or base64/file
          - {role: user, resource: {from: "docs://style-guide"}}   # embed a registry resource (frozen on publish)
          - {role: assistant, resource_link: {uri: "https://...", name: spec, mime_type: text/html}}
          - {role: assistant, resource_link: {from: "docs://style-guide"}}  # link a registry resource
    resources:
      - uri: docs://style-guide            # required
        name: style-guide                  # required
        title, description, mime_type      # optional strings
        folder: support/billing            # optional, as for prompts
        tags: [...]                        # optional
        audience: [user, assistant]        # optional annotation
        priority: 0.8                      # optional annotation, 0..1
        text: ... | base64: ... | file: style-guide.md    # at most one; file is relative to this YAML file
        labels: [production]
    templates:
      - uri_template: tickets://{project}/{id}   # required, RFC 6570
        name: ticket                       # required
        title, description, folder, mime_type, tags, audience, priority   # as for resources
        body: "Ticket {{ id }} of {{ project }}"                  # {{ variable }} from the URI
        variables:
          - {name: project, description: ..., suggestions: [web, api]}
        labels: [production]

Rules:
- Unknown keys are errors, so typos never pass silently; duplicate keys and duplicate entries too.
- Each listed entry's draft becomes exactly what the file says: a key left out means empty.
  Entries not in the file are left alone (nothing is deleted).
- `file:` paths are relative to the YAML file and must stay inside its folder. A side file
  with a text MIME type (text/*, JSON, XML, YAML) that is valid UTF-8 is stored as text,
  anything else as bytes. Export always writes text inline and bytes as `base64:`.
- `from:` names a registry resource by URI (defined in the same file or already in the
  registry); an embedded one is frozen into the prompt version when it is published.
- Inline resource links carry uri, name and mime_type only; a link's title and description
  come from the registry resource, so use `from:` for those.
- `released: {production: 3, staging: 4}` is written by export for information; import ignores it.
  Export writes `labels:` as the labels that point at the newest version, so exporting and
  re-importing with --publish moves nothing.
- Error messages name the file and line, the entry and the field, with 1-based list indexes
  as in the audit log: `demo.yaml:12: prompts[2] (name: code-review): messages[1].text: ...`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

import yaml

from registry.authoring.schema import schema_of
from registry.errors import RegistryError

# libyaml's reader, when PyYAML was built with it (the pure-Python one otherwise).
FAST_LOADER: type | None = getattr(yaml, "CSafeLoader", None)

SECTIONS = {"snippets": "snippet", "prompts": "prompt", "resources": "resource", "templates": "template"}
KEY_FIELD = {"snippet": "name", "prompt": "name", "resource": "uri", "template": "uri_template"}
# An entry's keys are its snapshot fields' (registry/authoring/schema.py `portable`), then labels/released
# and its folder (organisational, in no snapshot: registry/formats/folders.py).
PROMPT_KEYS = schema_of("prompt").portable_keys()
ARGUMENT_KEYS = tuple(key for column in schema_of("prompt").table("arguments").columns  # type: ignore[union-attr]
                      for key in column.portable)
RESOURCE_KEYS = schema_of("resource").portable_keys()
TEMPLATE_KEYS = schema_of("template").portable_keys()
VARIABLE_KEYS = tuple(key for column in schema_of("template").table("variables").columns  # type: ignore[union-attr]
                      for key in column.portable)
SNIPPET_KEYS = schema_of("snippet").portable_keys()
SNIPPET_ARGUMENT_KEYS = tuple(key for column in schema_of("snippet").table("arguments").columns  # type: ignore[union-attr]
                              for key in column.portable)
CONTENT_KEYS = ("text", "image", "audio", "resource", "resource_link")
TEXT_MIME_SUFFIXES = ("+json", "+xml", "+yaml")
TEXT_MIME_TYPES = ("application/json", "application/xml", "application/yaml", "application/x-yaml",
                   "application/javascript", "application/toml")

Path_ = tuple[Any, ...]
# Deepest nesting of lists and mappings accepted; the format itself needs six levels.
MAX_NESTING = 32
SURROGATE = re.compile("[\ud800-\udfff]")


class FormatError(RegistryError):
    """The file cannot be read as this format; `problems` lists each one with its place."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


# ------------------------------------------------------------------------------------------ places
def _entry_label(section: str, index: int, data: Any) -> str:
    label = f"{section}[{index}]"
    try:
        entry = data[section][index - 1]
        key_field = KEY_FIELD[SECTIONS[section]]
        key = entry.get(key_field)
        if isinstance(key, str) and key:
            label += f" ({key_field}: {key})"
    except (TypeError, KeyError, IndexError, AttributeError):
        pass
    return label


def _field_path(parts: Iterable[Any]) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def describe(path: Path_, data: Any) -> str:
    """A place in a document as messages name it: `prompts[2] (name: code-review): messages[1].text`."""
    if len(path) >= 2 and path[0] in SECTIONS and isinstance(path[1], int):
        head = _entry_label(path[0], path[1], data)
        rest = _field_path(path[2:])
        return f"{head}: {rest}" if rest else head
    return _field_path(path) or "top level"
