"""Writing the prompts-as-code YAML (export): entries as documents, text inline, bytes as base64,
through libyaml's writer where PyYAML has it; what import reads back unchanged."""

from __future__ import annotations

import base64
import re
from collections.abc import Mapping
from typing import Any

import yaml

from registry.formats import argtypes
from registry.portable.format import KEY_FIELD, SECTIONS


# ------------------------------------------------------------------------------------------ dumping
def _b64(data: bytes | None) -> str:
    return base64.b64encode(data or b"").decode("ascii")


def _put(out: dict[str, Any], key: str, value: Any) -> None:
    if value not in ("", None, [], {}):
        out[key] = value


def _audience_list(value: str) -> list[str]:
    return [a for a in (value or "").split(",") if a]


def _message_document(message: Mapping[str, Any]) -> dict[str, Any]:
    kind = message["kind"]
    out: dict[str, Any] = {"role": message["role"]}
    if kind == "text":
        out["text"] = message.get("text", "")
    elif kind in ("image", "audio"):
        out[kind] = {"mime_type": message.get("mime_type", ""), "base64": _b64(message.get("data"))}
    elif message.get("resource_uri"):
        body = {"from": message["resource_uri"]}
        if kind == "resource_link":
            _put(body, "name", message.get("link_name"))
        out[kind] = body
    elif kind == "resource":
        body = {"uri": message.get("uri", "")}
        _put(body, "mime_type", message.get("mime_type"))
        if message.get("data"):
            body["base64"] = _b64(message["data"])
        else:
            body["text"] = message.get("text", "")
        out[kind] = body
    else:
        body = {"uri": message.get("uri", "")}
        _put(body, "name", message.get("link_name"))
        _put(body, "mime_type", message.get("mime_type"))
        out[kind] = body
    return out


def entry_document(kind: str, data: Mapping[str, Any], *, labels: list[str] | None = None,
                   released: Mapping[str, int] | None = None) -> dict[str, Any]:
    """Draft data -> this format (empty optional fields left out). `labels` None: not written."""
    out: dict[str, Any] = {}
    if kind == "snippet":
        out["name"] = data["name"]
        for key in ("description", "folder", "tags"):
            _put(out, key, data.get(key))
        out["text"] = data.get("text", "")
        arguments = []
        for arg in data.get("arguments", []):
            declared: dict[str, Any] = {"name": arg["name"]}
            _put(declared, "description", arg.get("description"))
            if (arg.get("type") or argtypes.TEXT) != argtypes.TEXT:
                declared["type"] = arg["type"]
            arguments.append(declared)
        _put(out, "arguments", arguments)
    elif kind == "prompt":
        out["name"] = data["name"]
        for key in ("title", "description", "folder", "tags"):
            _put(out, key, data.get(key))
        arguments = []
        for arg in data.get("arguments", []):
            item: dict[str, Any] = {"name": arg["name"]}
            for key in ("title", "description"):
                _put(item, key, arg.get(key))
            item["required"] = bool(arg.get("required"))
            for key in ("default", "suggestions"):
                _put(item, key, arg.get(key))
            if (arg.get("type") or argtypes.TEXT) != argtypes.TEXT:
                item["type"] = arg["type"]
            for key, doc_key in (("choices", "choices"), ("min_length", "min_length"), ("max_length", "max_length"),
                                 ("pattern", "pattern"), ("minimum", "min"), ("maximum", "max")):
                _put(item, doc_key, arg.get(key))
            arguments.append(item)
        _put(out, "arguments", arguments)
        out["messages"] = [_message_document(m) for m in data.get("messages", [])]
    else:
        key_field = KEY_FIELD[kind]
        out[key_field] = data[key_field]
        for key in ("name", "title", "description", "folder", "mime_type", "tags"):
            _put(out, key, data.get(key))
        _put(out, "audience", _audience_list(data.get("audience", "")))
        _put(out, "priority", data.get("priority"))
        if kind == "resource":
            if data.get("data"):
                out["base64"] = _b64(data["data"])
            else:
                out["text"] = data.get("text", "")
        else:
            out["body"] = data.get("body", "")
            variables = []
            for variable in data.get("variables", []):
                item = {"name": variable["name"]}
                _put(item, "description", variable.get("description"))
                _put(item, "suggestions", variable.get("suggestions"))
                variables.append(item)
            _put(out, "variables", variables)
    if labels is not None:
        out["labels"] = list(labels)
    if released:
        out["released"] = dict(released)
    return out


class _Dumper(yaml.SafeDumper):
    """The pure-Python writer."""


# libyaml's writer (when PyYAML was built with it): about seven times faster. Both writers lay a
# document out alike (list items at their key's indentation), except that libyaml escapes some
# characters the Python one prints (astral-plane characters such as emoji become \U0001F600).
FAST_DUMPER: type | None = getattr(yaml, "CSafeDumper", None)
# Characters both writers print the same way; an entry with any other is written by the Python one.
_FAST_UNSAFE = re.compile("[^\t\n\x20-\x7e\xa0-\ud7ff\ue000-\ufffd]")


def _represent_str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    if "\x85" in value:  # NEL is a YAML line break: plain, single-quoted or block, it reads back as " " or "\n"
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style='"')
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


def _represent_list(dumper: yaml.SafeDumper, value: list[Any]) -> yaml.SequenceNode:
    short = all(isinstance(v, str) and "\n" not in v for v in value) and sum(len(v) + 2 for v in value) < 70
    return dumper.represent_sequence("tag:yaml.org,2002:seq", value, flow_style=bool(value) and short)


_STR, _MAP, _SEQ = "tag:yaml.org,2002:str", "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq"
_WRITERS: list[type[yaml.SafeDumper]] = [_Dumper]
if FAST_DUMPER is not None:
    class _FastDumper(FAST_DUMPER):  # type: ignore[misc, valid-type]
        """libyaml's writer with the same representers, the common types turned into nodes directly.

        Strings, lists and mappings make the nodes `_represent_str`, `_represent_list` and
        SafeRepresenter (with default_flow_style=False) make, without the per-object
        representer lookup and alias bookkeeping (the format has no aliases: import refuses them).
        """

        def represent_data(self, data: Any) -> yaml.Node:
            kind = type(data)
            if kind is str:
                return yaml.ScalarNode(_STR, data, style="|" if "\n" in data else None)
            if kind is dict:
                return yaml.MappingNode(_MAP, [(self.represent_data(k), self.represent_data(v))
                                               for k, v in data.items()], flow_style=False)
            if kind is list:
                short = all(type(v) is str and "\n" not in v for v in data) and sum(len(v) + 2 for v in data) < 70
                return yaml.SequenceNode(_SEQ, [self.represent_data(v) for v in data],
                                         flow_style=bool(data) and short)
            return super().represent_data(data)

    _WRITERS.append(_FastDumper)
for _writer in _WRITERS:
    _writer.add_representer(str, _represent_str)
    _writer.add_representer(list, _represent_list)


def _dump(data: Any, dumper: type) -> str:
    return yaml.dump(data, Dumper=dumper, sort_keys=False, allow_unicode=True, width=100, default_flow_style=False)


def _fast_safe(value: Any) -> bool:
    """Whether libyaml writes `value` exactly as the pure-Python writer does."""
    if isinstance(value, str):
        return _FAST_UNSAFE.search(value) is None
    if isinstance(value, dict):
        return all(_fast_safe(k) and _fast_safe(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_fast_safe(v) for v in value)
    return True


def dump_document(document: Mapping[str, list[dict[str, Any]]], header: str = "") -> str:
    """The document as YAML; loading the result gives back exactly `document`.

    The text is the pure-Python writer's whichever writer runs: libyaml's (if PyYAML has it)
    writes each run of entries in one go, and an entry holding a character it would escape
    (an emoji) is written by the Python writer. A block list in a block mapping starts at its
    key's indentation, so a section is its key line followed by its list written on its own.
    """
    if not document:
        return header
    fast = _WRITERS[-1] if FAST_DUMPER is not None else None
    if fast is None:
        return header + _dump(dict(document), _Dumper)
    parts = [header]
    for section, items in document.items():
        if not items or section not in SECTIONS:  # only the format's own plain keys are written by hand
            parts.append(_dump({section: items}, _Dumper))
            continue
        parts.append(f"{section}:\n")
        run: list[Any] = []
        for item in items:
            if _fast_safe(item):
                run.append(item)
                continue
            if run:
                parts.append(_dump(run, fast))
                run = []
            parts.append(_dump([item], _Dumper))
        if run:
            parts.append(_dump(run, fast))
    return "".join(parts)
