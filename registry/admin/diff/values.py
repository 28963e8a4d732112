"""One snapshot value in words: not set, Yes/No, a choice's label, a list, a document's text or summary.

Also the words of keys themselves (the form label of a schema field, a humanised key for the
others) and the documents a field stands for: a content-store reference, or the inline text or
bytes of older records, with the text read through a page's `load` when it may be shown.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any

from django.utils.translation import gettext

from registry.admin.diff.changes import NOT_SET, Value
from registry.admin.schema_labels import choice_labels, label_text
from registry.authoring.schema import CHOICE, LINES, SCHEMAS, Field, schema_of
from registry.authoring.snapshots import DIFF_DOCUMENT_LIMIT, DIFF_TEXT_LIMIT, Loader, TooLargeToDiff
from registry.errors import ContentMissing

# ----------------------------------------------------------------------------------------- schema
# Which fields there are, their labels and how they compare come from registry/authoring/schema.py;
# this module only turns them into words.

_LONG_TEXT_CHARS = 80
_HASH = re.compile(r"[0-9a-f]{64}")


def humanise(key: str) -> str:
    """'mimeType' / 'link_name' / 'a.b' -> 'Mime type' / 'Link name' / 'A › b', for keys with no form label."""
    words = re.sub(r"(?<=[a-z0-9])([A-Z])", r" \1", key).replace("_", " ").replace(".", " › ")
    words = words.strip().lower()
    return words[:1].upper() + words[1:] if words else key


def field_label(kind: str, key: str) -> str:
    """The form label of a snapshot key of `kind` (e.g. 'mimeType' -> 'Mime type'), else a humanised key."""
    found = schema_of(kind).field_for(key) if kind in SCHEMAS else None
    return label_text(found) if found is not None else humanise(key)


# ------------------------------------------------------------------------------------ documents


@dataclass(frozen=True)
class Document:
    """One side of a document field: a content-store reference, or the inline text/bytes of older records."""

    parts: tuple[tuple[str, Any], ...]  # the reference as the snapshot holds it, for comparing
    sha256: str = ""  # may be the short form an audit record keeps
    size: int | None = None
    binary: bool = False
    text: str | None = None  # the text itself: inline, or loaded from the store
    mime_type: str = ""
    note: str = ""  # why the text is not shown

    def summary(self) -> str:
        """'image/png · 2,150 bytes · sha256 1a2b3c4d5e6f', or the text's size and hash."""
        bits = [self.mime_type] if self.binary and self.mime_type else []
        if self.size is not None:
            bits.append(gettext("%(size)s bytes") % {"size": f"{self.size:,}"})
        if self.sha256:
            bits.append(f"sha256 {self.sha256[:12]}")
        text = " · ".join(bits)
        return f"{text} ({self.note})" if self.note else text


def document_of(field: Field, mapping: Any) -> Document | None:
    """The document `field` stands for inside `mapping` (None when the mapping has none of its parts)."""
    if not isinstance(mapping, dict):
        return None
    parts = {key: mapping[key] for key in field.parts if mapping.get(key) not in (None, "")}
    if not parts:
        return None
    sha, size = parts.get("sha256", ""), parts.get("size")
    inline = parts.get("blob", parts.get("data"))
    if isinstance(inline, dict):  # a {sha256, size} reference under `blob` (an early snapshot shape)
        sha, size, inline = inline.get("sha256", sha), inline.get("size", size), None
    recorded = re.fullmatch(r"<(\d+) bytes, sha256 ([0-9a-f]+)>", inline) if isinstance(inline, str) else None
    if recorded:  # bytes already summarised when an audit entry was written
        size, sha, inline = int(recorded.group(1)), recorded.group(2), None
    elif isinstance(inline, str):
        try:
            raw = base64.b64decode(inline, validate=True)
        except (binascii.Error, ValueError):
            raw = inline.encode()
        size, sha = len(raw), hashlib.sha256(raw).hexdigest()
    sha = str(sha).removeprefix("sha256 ")
    # Image and audio blocks hold bytes only; a resource says how its bytes are served. Audit
    # records keep bytes as a "<N bytes, sha256 ...>" summary (registry/authoring/snapshots.py), so a
    # recorded reference without its encoding is a long text.
    binary = ("encoding" not in field.parts or parts.get("encoding") == "base64"
              or "blob" in parts or "data" in parts)
    text = parts.get("text")
    return Document(tuple(sorted(parts.items(), key=lambda kv: kv[0])), sha, size if isinstance(size, int) else None,
                    binary, text if isinstance(text, str) else None, str(mapping.get("mimeType") or ""))


def with_text(doc: Document, load: Loader) -> Document:
    """The document with its text loaded from the store, when it is text, complete and not too long."""
    if doc.binary or doc.text is not None:
        return doc
    too_long = replace(doc, note=gettext("too long to compare here: over %(limit)s KiB")
                       % {"limit": DIFF_DOCUMENT_LIMIT // 1024})
    if not _HASH.fullmatch(doc.sha256):  # an audit entry written before whole hashes were kept
        return replace(doc, note=gettext("the audit log keeps only the size and hash of texts over %(limit)s KiB")
                       % {"limit": DIFF_TEXT_LIMIT // 1024})
    if doc.size is not None and doc.size > DIFF_DOCUMENT_LIMIT:
        return too_long
    try:
        return replace(doc, text=load(doc.sha256, "text"))
    except TooLargeToDiff:
        return too_long
    except (ContentMissing, UnicodeDecodeError, ValueError):
        return replace(doc, note=gettext("not in the content store"))


# ------------------------------------------------------------------------------------ value words


def _choice_text(field: Field | None, leaf: str, value: Any) -> str | None:
    name = field.choices if field is not None and field.choices else {"role": "role", "type": "content_type",
                                                                        "audience": "audience"}.get(leaf, "")
    if not name:
        return None
    labels = choice_labels(name)
    if isinstance(value, list):  # the audience annotation is a list
        joined = ",".join(str(v) for v in value)
        return labels.get(joined, ", ".join(str(v) for v in value))
    return labels.get(str(value), str(value))


def display(value: Any, *, key: str = "", field: Field | None = None) -> Value:
    """How one snapshot value reads: not set, Yes/No, a list joined, a file summarised, a number.

    `field` (the schema's) decides; keys the schema does not know are read by their shape.
    """
    leaf = key.rsplit(".", 1)[-1]
    if value is None or value == "" or value == [] or value == {}:
        return NOT_SET
    if isinstance(value, Document):
        if value.text is not None:
            return Value(value.text, multiline="\n" in value.text)
        return Value(value.summary())
    shows = field.shows if field is not None else ""
    if shows == CHOICE or (not shows and leaf in ("role", "type", "audience")):
        chosen = _choice_text(field, leaf, value)
        if chosen is not None:
            return Value(chosen)
    if isinstance(value, bool):
        return Value(gettext("Yes") if value else gettext("No"))
    if isinstance(value, (int, float)):
        return Value(f"{value:,}" if leaf == "size" and isinstance(value, int) else str(value))
    if isinstance(value, list):
        items = [display(item).text for item in value]
        if shows == LINES or (not shows and leaf == "suggestions"):
            return Value("\n".join(items), multiline=len(items) > 1)
        return Value(", ".join(items))
    if isinstance(value, dict):
        return Value("; ".join(f"{humanise(k)}: {display(v, key=k).text or gettext('not set')}"
                               for k, v in value.items()))
    if isinstance(value, str) and _HASH.fullmatch(value) and leaf == "sha256":
        return Value(f"sha256 {value[:12]}")
    text = str(value)
    return Value(text, multiline="\n" in text)


def change_status(before: Any, after: Any) -> str:
    if display(before).missing:
        return "added"
    if display(after).missing:
        return "removed"
    return "changed"


def is_long(value: Any) -> bool:
    return isinstance(value, str) and ("\n" in value or len(value) > _LONG_TEXT_CHARS)
