"""Move every stored document into the content store, and give each version its listing.

Draft bytes (Resource.data, PromptMessage.data) become objects in the "registry" storage
referenced by hash; version (and review) snapshots lose their inline base64 and resource
text for `{"sha256", "size", "encoding"}` references; each version gets its `listing`.

Version rows are otherwise insert-only (registry/models/base.py refuses save and update).
This is the one allowed rewrite: the served content and its meaning are exactly the same,
only where the bytes live changes. It goes through the historical models' plain manager,
which does not carry that guard. The content hash is recomputed from the rewritten
snapshot, as it is defined as the hash of the canonical snapshot (publish compares it to
detect an unchanged draft). Idempotent: rows already converted are left alone, and storing
bytes that exist is a no-op. Reversible: going back inlines the bytes again.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import storages
from django.db import migrations

VERSION_MODELS = {"prompt": "PromptVersion", "resource": "ResourceVersion", "template": "ResourceTemplateVersion"}


def _name(sha: str) -> str:
    return f"blobs/{sha[:2]}/{sha}"


def _hash(snapshot: dict[str, Any]) -> str:
    canonical = json.dumps(snapshot, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class _Store:
    def __init__(self, apps: Any) -> None:
        self.backend = storages["registry"]
        self.objects = apps.get_model("registry", "ContentObject").objects

    def put(self, raw: bytes) -> str:
        sha = hashlib.sha256(raw).hexdigest()
        if not self.backend.exists(_name(sha)):
            self.backend.save(_name(sha), ContentFile(raw))
        self.objects.get_or_create(sha256=sha, defaults={"size": len(raw)})
        return sha

    def read(self, sha: str) -> bytes:
        with self.backend.open(_name(sha), "rb") as handle:
            return handle.read()


def _to_ref(inline: dict[str, Any], store: _Store) -> bool:
    """Inline `blob`/`text` of a resource (or embedded resource) -> a reference; True if changed."""
    if "sha256" in inline:
        return False
    if "blob" in inline:
        raw = base64.b64decode(inline.pop("blob"))
        encoding = "base64"
    else:
        raw = inline.pop("text", "").encode("utf-8")
        encoding = "text"
    inline.update(sha256=store.put(raw), size=len(raw), encoding=encoding)
    return True


def _from_ref(ref: dict[str, Any], store: _Store) -> bool:
    if "sha256" not in ref:
        return False
    raw = store.read(ref.pop("sha256"))
    encoding = ref.pop("encoding", "text")
    ref.pop("size", None)
    if encoding == "base64":
        ref["blob"] = base64.b64encode(raw).decode("ascii")
    else:
        ref["text"] = raw.decode("utf-8")
    return True


def _kind_of(snapshot: dict[str, Any]) -> str:
    if "messages" in snapshot:
        return "prompt"
    return "template" if "uriTemplate" in snapshot else "resource"


def forward_snapshot(snapshot: dict[str, Any], store: _Store) -> bool:
    kind = _kind_of(snapshot)
    if kind == "resource":
        return _to_ref(snapshot, store)
    changed = False
    for message in snapshot.get("messages", []) if kind == "prompt" else ():
        block = message.get("content") or {}
        if block.get("type") in ("image", "audio") and "data" in block:
            raw = base64.b64decode(block.pop("data"))
            block.update(sha256=store.put(raw), size=len(raw))
            changed = True
        elif block.get("type") == "resource":
            changed = _to_ref(block["resource"], store) or changed
    return changed


def backward_snapshot(snapshot: dict[str, Any], store: _Store) -> bool:
    kind = _kind_of(snapshot)
    if kind == "resource":
        size = snapshot.get("size")
        changed = _from_ref(snapshot, store)
        if changed and size is not None:
            snapshot["size"] = size
        return changed
    changed = False
    for message in snapshot.get("messages", []) if kind == "prompt" else ():
        block = message.get("content") or {}
        if block.get("type") in ("image", "audio") and "sha256" in block:
            raw = store.read(block.pop("sha256"))
            block.pop("size", None)
            mime_type = block.pop("mimeType", "")
            block.update(data=base64.b64encode(raw).decode("ascii"), mimeType=mime_type)
            changed = True
        elif block.get("type") == "resource":
            changed = _from_ref(block["resource"], store) or changed
    return changed


def _rewrite(apps: Any, convert: Any, with_listing: bool) -> None:
    from registry.authoring.listing import listing_of  # the listing format of this release

    store = _Store(apps)
    for kind, model_name in VERSION_MODELS.items():
        model = apps.get_model("registry", model_name)
        for pk, snapshot, _digest, listing in model.objects.values_list("pk", "snapshot", "content_hash", "listing"):
            changed = convert(snapshot, store)
            fields: dict[str, Any] = {}
            if changed:
                fields.update(snapshot=snapshot, content_hash=_hash(snapshot))
            if with_listing and (changed or not listing):
                fields["listing"] = listing_of(kind, snapshot)
            if fields:
                model.objects.filter(pk=pk).update(**fields)  # historical manager: no insert-only guard
    reviews = apps.get_model("registry", "ReviewRequest")
    for pk, snapshot, _digest in reviews.objects.exclude(snapshot=None).values_list("pk", "snapshot", "content_hash"):
        if snapshot and convert(snapshot, store):
            reviews.objects.filter(pk=pk).update(snapshot=snapshot, content_hash=_hash(snapshot))


def forward(apps: Any, schema_editor: Any) -> None:
    store = _Store(apps)
    for model_name in ("Resource", "PromptMessage"):
        model = apps.get_model("registry", model_name)
        for row in model.objects.filter(data_sha256="").exclude(data=None).only("pk", "data").iterator():
            raw = bytes(row.data)
            if raw:
                model.objects.filter(pk=row.pk).update(data_sha256=store.put(raw), data_size=len(raw))
    _rewrite(apps, forward_snapshot, with_listing=True)


def backward(apps: Any, schema_editor: Any) -> None:
    store = _Store(apps)
    for model_name in ("Resource", "PromptMessage"):
        model = apps.get_model("registry", model_name)
        for row in model.objects.exclude(data_sha256="").only("pk", "data_sha256").iterator():
            model.objects.filter(pk=row.pk).update(data=store.read(row.data_sha256), data_sha256="", data_size=0)
    _rewrite(apps, backward_snapshot, with_listing=False)


class Migration(migrations.Migration):
    dependencies = [("registry", "0011_content_store_schema")]

    operations = [migrations.RunPython(forward, backward)]
