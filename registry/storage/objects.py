"""What the content store holds: one row per stored byte string, keyed by its SHA-256.

The model lives with the store that writes it (registry/storage/blobs.py), below the models that
reference stored bytes; registry.models imports it, so Django knows it as registry.ContentObject."""

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

    def delete(self, *args, **kwargs):
        from registry.errors import ImmutableVersionError

        raise ImmutableVersionError("Stored content is write-once and is never deleted.")
