"""What an import read from each YAML file, so the same bytes need not be parsed again."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class ImportedFile(models.Model):
    """A YAML file an import read, with the digest of its bytes then (one row per file path).

    Parsing and checking a file is most of an unchanged re-import (registry.portable.unchanged):
    with this row, a file whose bytes and side files are the same as when it was last imported,
    and whose entries are all still recorded unchanged on their rows, is not parsed at all. The
    entries are what its parse gave: [kind, key, stored key, digest, labels] each."""

    path = models.CharField(_("path"), max_length=1024, unique=True,
                            help_text=_("The file's resolved path: one row per file, its last import."))
    digest = models.CharField(_("digest"), max_length=64, help_text=_("SHA-256 of the file's bytes."))
    side_files = models.JSONField(_("side files"), default=dict, help_text=_("Side file path -> SHA-256."))
    entries = models.JSONField(_("entries"), default=list)
    recorded_at = models.DateTimeField(_("recorded at"), auto_now=True)

    class Meta:
        verbose_name = _("imported file")
        verbose_name_plural = _("imported files")

    def __str__(self) -> str:
        return f"{self.path} ({self.digest[:12]})"
