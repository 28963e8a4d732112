"""The content store: every document's bytes kept once, under their SHA-256, outside the rows.

Bytes live in Django's storage named `registry` (settings.STORAGES; the filesystem under
MEDIA_ROOT by default, an S3-compatible bucket when configured) as `blobs/ab/<sha256>`.
Drafts and versions hold only the hash and size, so identical bytes are stored once, a
rollback or restore copies nothing, and a version's row stays small.

Objects are write-once: storing bytes that exist is a no-op, nothing here overwrites or
deletes an object, and a `ContentObject` row records each one. Bytes are written before any
row that references them, so a failure leaves at worst an unreferenced object (harmless).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Iterable

from django.core.files.base import ContentFile
from django.core.files.storage import Storage, storages

from registry.errors import ContentMissing

STORAGE_ALIAS = "registry"


@dataclass(frozen=True)
class Stored:
    """A reference to bytes in the content store (what drafts and snapshots keep instead of bytes)."""

    sha256: str
    size: int


def storage() -> Storage:
    return storages[STORAGE_ALIAS]


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def object_name(sha256: str) -> str:
    """Where the bytes of `sha256` live in the storage; two hex digits of fan-out keep directories small."""
    if len(sha256) != 64 or any(c not in "0123456789abcdef" for c in sha256):
        raise ValueError(f"not a SHA-256 hex digest: {sha256!r}")
    return f"blobs/{sha256[:2]}/{sha256}"


def put(data: bytes) -> Stored:
    """Store `data` unless it is there already, record it, and return its reference."""
    from registry.models import ContentObject

    data = bytes(data)
    ref = Stored(sha256_of(data), len(data))
    name = object_name(ref.sha256)
    backend = storage()
    if not backend.exists(name):
        backend.save(name, ContentFile(data))  # a concurrent writer of the same bytes may win: same content
    ContentObject.objects.get_or_create(sha256=ref.sha256, defaults={"size": ref.size})
    return ref


def put_many(blobs: Iterable[bytes]) -> None:
    """`put` for many objects: the same storage writes, and the records in a few queries."""
    from registry.models import ContentObject

    by_sha = {sha256_of(bytes(data)): bytes(data) for data in blobs}
    backend = storage()
    for sha, data in by_sha.items():
        name = object_name(sha)
        if not backend.exists(name):
            backend.save(name, ContentFile(data))
    shas = list(by_sha)
    known: set[str] = set()
    for start in range(0, len(shas), 500):
        known.update(ContentObject.objects.filter(sha256__in=shas[start:start + 500]).values_list("sha256", flat=True))
    ContentObject.objects.bulk_create([ContentObject(sha256=sha, size=len(data)) for sha, data in by_sha.items()
                                       if sha not in known], batch_size=500, ignore_conflicts=True)


def exists(sha256: str) -> bool:
    return storage().exists(object_name(sha256))


def read(sha256: str) -> bytes:
    """The bytes stored under `sha256`, checked against it; ContentMissing when absent or damaged."""
    name = object_name(sha256)
    backend = storage()
    try:
        with backend.open(name, "rb") as handle:
            data = handle.read()
    except FileNotFoundError as exc:
        raise ContentMissing(sha256) from exc
    except Exception as exc:  # S3 reports a missing key as a client error on open or read
        if not backend.exists(name):
            raise ContentMissing(sha256) from exc
        raise
    if sha256_of(data) != sha256:
        raise ContentMissing(sha256, "does not match its hash (the stored bytes are damaged)")
    return data


def stored_size(sha256: str) -> int:
    """The size of the stored bytes of `sha256` without reading them; ContentMissing when absent."""
    try:
        return storage().size(object_name(sha256))
    except FileNotFoundError as exc:
        raise ContentMissing(sha256) from exc
    except Exception as exc:  # S3 reports a missing key as a client error
        if not exists(sha256):
            raise ContentMissing(sha256) from exc
        raise


def text(sha256: str) -> str:
    """Stored UTF-8 text (text resources, inline embedded text)."""
    return read(sha256).decode("utf-8")
