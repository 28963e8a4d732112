"""The content store: every document's bytes kept once, under their SHA-256, outside the rows.

Bytes live in Django's storage named `registry` (settings.STORAGES; the filesystem under
MEDIA_ROOT by default, an S3-compatible bucket when configured) as `blobs/ab/<sha256>`.
Drafts and versions hold only the hash and size, so identical bytes are stored once, a
rollback or restore copies nothing, and a version's row stays small.

An object appears under its content address only complete. On the filesystem the bytes are
written to a temporary name in the object's own directory, flushed to disk and then renamed
into place (atomic on POSIX), so a write cut short by a full disk or a killed process leaves
nothing under the final name; an S3 PUT is atomic by itself. Storing bytes whose name exists
checks the stored object first (its size; on the filesystem its hash too, a local read) and
rewrites it when it is damaged: publishing the same bytes again repairs a short object instead
of skipping it. Intact objects are never rewritten or deleted, and a `ContentObject` row
records each one. Bytes are written before any row that references them, so a failure leaves
at worst an unreferenced object (harmless). A failing storage (disk full, read-only, bucket
unreachable) raises `StorageUnavailable`, which callers answer as a temporary outage.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass

from django.core.files.base import ContentFile
from django.core.files.storage import FileSystemStorage, Storage, storages

from registry.errors import ContentMissing, StorageUnavailable
from registry.storage.objects import ContentObject

STORAGE_ALIAS = "registry"
WRITE_CHUNK = 1024 * 1024  # bytes per write(2); a short write is continued, a failed one undone
MISSING = "is missing from the content store"
HASH_MISMATCH = "does not match its hash"

log = logging.getLogger(__name__)


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
    """Store `data` unless an intact copy is there already, record it, and return its reference."""
    data = bytes(data)
    ref = Stored(sha256_of(data), len(data))
    _ensure_stored(storage(), ref.sha256, data)
    ContentObject.objects.get_or_create(sha256=ref.sha256, defaults={"size": ref.size})
    return ref


def put_many(blobs: Iterable[bytes]) -> None:
    """`put` for many objects: the same storage writes, and the records in a few queries."""
    by_sha = {sha256_of(bytes(data)): bytes(data) for data in blobs}
    backend = storage()
    for sha, data in by_sha.items():
        _ensure_stored(backend, sha, data)
    shas = list(by_sha)
    known: set[str] = set()
    for start in range(0, len(shas), 500):
        known.update(ContentObject.objects.filter(sha256__in=shas[start:start + 500]).values_list("sha256", flat=True))
    ContentObject.objects.bulk_create([ContentObject(sha256=sha, size=len(data)) for sha, data in by_sha.items()
                                       if sha not in known], batch_size=500, ignore_conflicts=True)


def exists(sha256: str) -> bool:
    """Whether an object of this name is stored (see `problem` for whether it is intact)."""
    return _stored_size(storage(), object_name(sha256)) is not None


def problem(sha256: str, size: int | None = None, *, verify: bool = False) -> str | None:
    """Why the object of `sha256` cannot be served, or None when it can.

    `size` is what the object should hold (a snapshot's, draft's or `ContentObject` row's
    record; None: only its presence is checked). Without `verify` that is one stat or HEAD
    (what `registry_check --quick` and the admin use); with it the bytes are re-hashed."""
    if verify:
        try:
            read(sha256)
        except ContentMissing as exc:
            return HASH_MISMATCH if exc.damaged else MISSING
        return None
    stored = _stored_size(storage(), object_name(sha256))
    if stored is None:
        return MISSING
    if size is not None and stored != size:
        return f"is damaged: {stored:,} of {size:,} bytes stored"
    return None


def check_stored(shas: Iterable[str]) -> None:
    """Raise ContentMissing for the first object of `shas` that is missing or of the wrong size.

    For references a publish copies from an existing draft (their bytes were stored earlier):
    a version is never published over a damaged object."""
    wanted = list(dict.fromkeys(shas))
    sizes: dict[str, int] = {}
    for start in range(0, len(wanted), 500):
        sizes.update(ContentObject.objects.filter(sha256__in=wanted[start:start + 500]).values_list("sha256", "size"))
    for sha in wanted:
        detail = problem(sha, sizes.get(sha))
        if detail is not None:
            raise ContentMissing(sha, detail)


_logged: dict[str, float] = {}


def read(sha256: str) -> bytes:
    """The bytes stored under `sha256`, checked against it; ContentMissing when absent or damaged.

    A damaged or missing object is logged (once a minute per object): every client reading it
    gets an error naming the hash, and the operator needs to know before they ask."""
    name = object_name(sha256)
    backend = storage()
    try:
        with backend.open(name, "rb") as handle:
            data = handle.read()
    except FileNotFoundError as exc:
        _log_unservable(sha256, MISSING)
        raise ContentMissing(sha256) from exc
    except Exception as exc:  # S3 reports a missing key as a client error on open or read
        if _stored_size(backend, name) is None:
            _log_unservable(sha256, MISSING)
            raise ContentMissing(sha256) from exc
        raise _unavailable(exc, "read") from exc
    if sha256_of(data) != sha256:
        _log_unservable(sha256, f"does not match its hash ({len(data):,} bytes stored)")
        raise ContentMissing(sha256, "does not match its hash (the stored bytes are damaged)", damaged=True)
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


# --------------------------------------------------------------------------- writing


def _ensure_stored(backend: Storage, sha256: str, data: bytes) -> None:
    """Make `blobs/..../<sha256>` hold exactly `data`: write it when absent, rewrite it when damaged."""
    name = object_name(sha256)
    try:
        detail = _damage(backend, name, sha256, data)
        if detail is None:
            return
        if detail != MISSING:
            log.warning("content object %s %s; writing it again", sha256, detail)
        if isinstance(backend, FileSystemStorage):
            _write_file(backend, name, data)
        else:
            _write_object(backend, name, sha256, data, replace=detail != MISSING)
    except (ContentMissing, StorageUnavailable):
        raise
    except Exception as exc:  # a full or read-only disk, an unreachable bucket
        raise _unavailable(exc, "write") from exc


def _damage(backend: Storage, name: str, sha256: str, data: bytes) -> str | None:
    """None if the stored object already holds `data`; else what is wrong with it (MISSING included)."""
    stored = _stored_size(backend, name)
    if stored is None:
        return MISSING
    if stored != len(data):
        return f"is damaged: {stored:,} of {len(data):,} bytes stored"
    if isinstance(backend, FileSystemStorage):  # a local read is cheap next to the write it spares
        with open(backend.path(name), "rb") as handle:
            if hashlib.file_digest(handle, "sha256").hexdigest() != sha256:
                return HASH_MISMATCH
    return None


def _stored_size(backend: Storage, name: str) -> int | None:
    """The stored object's size, or None when there is none (one stat or HEAD)."""
    try:
        return backend.size(name)
    except FileNotFoundError:
        return None
    except Exception:  # S3: a missing key is a client error; anything else is an outage
        if not backend.exists(name):
            return None
        raise


def _write_file(backend: FileSystemStorage, name: str, data: bytes) -> None:
    """Temporary file in the object's directory, fsync, rename over the final name, fsync the directory."""
    path = backend.path(name)
    directory = os.path.dirname(path)
    if backend.directory_permissions_mode is not None:
        os.makedirs(directory, backend.directory_permissions_mode, exist_ok=True)
    else:
        os.makedirs(directory, exist_ok=True)
    temporary = os.path.join(directory, f".{os.path.basename(path)}.{secrets.token_hex(6)}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view[:WRITE_CHUNK])
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        if backend.file_permissions_mode is not None:
            os.chmod(temporary, backend.file_permissions_mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    try:
        dir_fd = os.open(directory, os.O_RDONLY)
    except OSError:  # not every platform opens directories
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


def _write_object(backend: Storage, name: str, sha256: str, data: bytes, *, replace: bool) -> None:
    """Any other storage (S3: one PUT, atomic), through the public Storage API.

    A storage that does not overwrite (S3 with file_overwrite=False) saves under another name
    when this one exists: a damaged object is deleted first, and a copy saved beside a name a
    concurrent writer just created is deleted again (that writer stored the same bytes)."""
    if replace:
        backend.delete(name)
    saved = backend.save(name, ContentFile(data))
    if saved != name:
        backend.delete(saved)
        if _damage(backend, name, sha256, data) is not None:
            raise StorageUnavailable("write", f"could not store content {sha256[:12]} under its name")


def _unavailable(exc: BaseException, operation: str) -> StorageUnavailable:
    code = getattr(exc, "errno", None)
    if code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        reason = "full"
    elif code == errno.EROFS:
        reason = "read_only"
    else:
        reason = "unavailable"
    log.error("content store %s failed (%s): %r", operation, reason, exc)
    return StorageUnavailable(operation, f"{exc}", reason=reason)


def _log_unservable(sha256: str, detail: str) -> None:
    now = time.monotonic()
    key = f"{sha256} {detail}"
    if now - _logged.get(key, -1e9) < 60:
        return
    if len(_logged) > 1000:
        _logged.clear()
    _logged[key] = now
    log.error("content object %s %s: clients reading it get an error; store the same bytes again "
              "(upload or import) or restore the object, then run registry_check", sha256, detail)
