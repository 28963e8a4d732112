"""What the content store holds: one row per stored byte string, keyed by its SHA-256."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class ContentObject(models.Model):
    """A write-once object in the registry storage (`blobs/ab/<sha256>`).

    The row is written after the bytes, so a row always has its bytes unless storage lost
    them (`manage.py registry_check` finds that). Rows are never deleted by the application:
    versions reference them for ever.
    """

    sha256 = models.CharField(_("sha256"), max_length=64, primary_key=True)
    size = models.PositiveBigIntegerField(_("size"))
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        verbose_name = _("content object")
        verbose_name_plural = _("content objects")
        ordering = ["created_at"]

    def __str__(self) -> str:
        return f"{self.sha256[:12]} ({self.size} bytes)"

    def delete(self, *args, **kwargs):  # type: ignore[override]
        from registry.errors import ImmutableVersionError

        raise ImmutableVersionError("Stored content is write-once and is never deleted.")


class StoredBytesMixin:
    """`data` (bytes or None) of a draft row, kept in the content store; the row has only its hash.

    Assigning bytes hashes them at once and stores them when the row is saved (`store_pending`
    for bulk_create), so a draft built only to be validated stores nothing. Assigning a
    `registry.content.Stored` reference (restoring a version) copies nothing.
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
        from registry import content

        raw = content.read(self.data_sha256)
        self.__dict__["_stored_bytes"] = (self.data_sha256, raw, False)
        return raw

    @data.setter
    def data(self, value: object) -> None:
        from registry import content

        if isinstance(value, content.Stored):
            self.data_sha256, self.data_size = value.sha256, value.size
            self.__dict__.pop("_stored_bytes", None)
            return
        raw = bytes(value) if value else b""  # type: ignore[arg-type]
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
        from registry import content
        from registry.errors import ContentTooLarge
        from registry.validation import max_upload_bytes

        if len(pending[1]) > max_upload_bytes():
            raise ContentTooLarge(len(pending[1]), max_upload_bytes())
        content.put(pending[1])
        self.__dict__["_stored_bytes"] = (pending[0], pending[1], False)

    def save(self, *args, **kwargs) -> None:
        self.store_pending()
        super().save(*args, **kwargs)  # type: ignore[misc]
