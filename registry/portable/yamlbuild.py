"""Build a prompts-as-code document, and its line numbers, straight from the YAML parser's events.

`registry.portable.format` reads every file as a stream of events first (its hostile-document check).
For a 40 MB export, composing the same text again into nodes, constructing Python data from
the nodes and walking the nodes for line numbers cost three times that pass. This builder
makes the data and the line map from the events of that one pass instead, for the documents
the format consists of: one document of mappings, lists and scalars, without tags other than
the standard ones, merge keys or collection keys. Scalars get the tag PyYAML's resolver gives
them and are constructed by its SafeConstructor (strings as they are), so the result is what
`yaml.load(..., SafeLoader)` and the node walk make. On anything else `ok` turns False and the
caller composes the document as before (which also words any error the same way).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

Path_ = tuple[Any, ...]
STR = "tag:yaml.org,2002:str"
SEQ = "tag:yaml.org,2002:seq"
MAP = "tag:yaml.org,2002:map"


class _Unsupported(Exception):
    pass


@dataclass
class _Frame:
    container: Any  # dict or list being filled
    path: Path_
    index: int = 0  # items so far (lists; 1-based paths)
    key: tuple[Any, Path_] | None = None  # mapping: the key waiting for its value, and its path
    seen: set[Any] = field(default_factory=set)  # mapping: raw key texts so far


class EventBuilder:
    """Feed every event of one stream; then `data`, `lines` and `duplicates` are what
    construct_document and portable._walk make, if `ok`."""

    def __init__(self) -> None:
        self.ok = True
        self.finished = False
        self.data: Any = None
        self.lines: dict[Path_, int] = {}
        self.duplicates: list[tuple[Path_, int]] = []
        self._stack: list[_Frame] = []
        self._documents = 0
        self._resolver = Resolver()
        self._constructor = SafeConstructor()

    def feed(self, event: yaml.Event) -> None:
        if not self.ok:
            return
        try:
            self._feed(event)
        except (_Unsupported, yaml.YAMLError, TypeError, ValueError):
            self.ok = False  # the composer reads it again, and reports any error in its own words

    def _feed(self, event: Any) -> None:  # a yaml.Event, told apart by its exact type (which mypy does not narrow)
        kind = type(event)
        if kind is yaml.ScalarEvent:
            tag = event.tag
            if tag is None or tag == "!":
                tag = self._resolver.resolve(yaml.ScalarNode, event.value, event.implicit)
            if tag == STR:
                value: Any = event.value
            else:
                node = yaml.ScalarNode(tag, event.value, event.start_mark, event.end_mark, style=event.style)
                value = self._constructor.construct_object(node, deep=True)
            self._add(value, event, tag, collection=False)
        elif kind is yaml.MappingStartEvent or kind is yaml.SequenceStartEvent:
            mapping = kind is yaml.MappingStartEvent
            tag = event.tag
            if tag is None or tag == "!":
                tag = MAP if mapping else SEQ
            if tag != (MAP if mapping else SEQ):
                raise _Unsupported(tag)
            container: Any = {} if mapping else []
            path = self._add(container, event, tag, collection=True)
            self._stack.append(_Frame(container, path))
        elif kind is yaml.MappingEndEvent or kind is yaml.SequenceEndEvent:
            frame = self._stack.pop()
            if frame.key is not None:
                raise _Unsupported("a key without a value")
        elif kind is yaml.DocumentStartEvent:
            self._documents += 1
            if self._documents > 1:
                raise _Unsupported("more than one document")
        elif kind is yaml.StreamEndEvent:
            self.finished = True
        elif kind is yaml.AliasEvent:
            raise _Unsupported("alias")

    def _add(self, value: Any, event: Any, tag: str, *, collection: bool) -> Path_:  # event: as in _feed
        line = event.start_mark.line + 1
        if not self._stack:
            if self._documents != 1 or self.lines:
                raise _Unsupported("a second root")
            self.data = value
            self.lines[()] = line
            return ()
        frame = self._stack[-1]
        if isinstance(frame.container, list):
            frame.index += 1
            path = (*frame.path, frame.index)
            frame.container.append(value)
            self.lines.setdefault(path, line)
            return path
        if frame.key is None:  # a key
            if collection or tag != STR:
                raise _Unsupported("a key that is not a plain string")  # merge keys, numbers, mappings
            raw = event.value
            path = (*frame.path, raw)
            if raw in frame.seen:
                self.duplicates.append((path, line))
            frame.seen.add(raw)
            self.lines.setdefault(path, line)
            frame.key = (value, path)
            return path
        key, path = frame.key
        frame.key = None
        frame.container[key] = value
        self.lines.setdefault(path, line)
        return path
