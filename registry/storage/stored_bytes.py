"""Draft rows whose bytes live in the content store: the row keeps only their hash and size."""

from __future__ import annotations

from registry.conf import max_upload_bytes
from registry.errors import ContentTooLarge
from registry.storage import blobs as content


class StoredBytesMixin:
    """`data` (bytes or None) of a draft row, kept in the content store; the row has only its hash.

    Assigning bytes hashes them at once and stores them when the row is saved (`store_pending`
    for bulk_create), so a draft built only to be validated stores nothing. Assigning a
    `registry.storage.blobs.Stored` reference (restoring a version) copies nothing.
    """

    data_sha256: str
    data_size: int

    @property
    def data(self) -> bytes | None:
        if not self.data_sha256:
            return None
        pending = self.__dict__.get("_stored_bytes")
        if pending is not None and pending[0] == self.data_sha256:
            return pending[1]
        raw = content.read(self.data_sha256)
        self.__dict__["_stored_bytes"] = (self.data_sha256, raw, False)
        return raw

    @data.setter
    def data(self, value: bytes | bytearray | memoryview | content.Stored | None) -> None:
        if isinstance(value, content.Stored):
            self.data_sha256, self.data_size = value.sha256, value.size
            self.__dict__.pop("_stored_bytes", None)
            return
        raw = bytes(value) if value else b""
        if not raw:
            self.data_sha256, self.data_size = "", 0
            self.__dict__.pop("_stored_bytes", None)
            return
        self.data_sha256, self.data_size = content.sha256_of(raw), len(raw)
        self.__dict__["_stored_bytes"] = (self.data_sha256, raw, True)

    @property
    def has_data(self) -> bool:
        return bool(self.data_sha256)

    def store_pending(self) -> None:
        """Write assigned bytes to the content store (before the row that references them)."""
        pending = self.__dict__.get("_stored_bytes")
        if pending is None or not pending[2] or pending[0] != self.data_sha256:
            return
        if len(pending[1]) > max_upload_bytes():
            raise ContentTooLarge(len(pending[1]), max_upload_bytes())
        content.put(pending[1])
        self.__dict__["_stored_bytes"] = (pending[0], pending[1], False)

    def save(self, *args, **kwargs) -> None:
        self.store_pending()
        super().save(*args, **kwargs)  # type: ignore[misc]
