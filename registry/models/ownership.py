"""Team ownership of a folder: which Django group's editors and publishers look after its entries.

A folder without a row (and without an owned folder above it) belongs to nobody in particular:
everyone with the role's permissions may work there, as before folders had owners. The rules
(nearest owned folder wins, who may do what) are registry.roles'; this is only the record.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.formats.folders import FOLDER_MAX_LENGTH, normalise_folder, validate_folder


class FolderOwner(models.Model):
    """`group` owns `folder` and every folder below it that has no owner of its own."""

    folder = models.CharField(_("folder"), max_length=FOLDER_MAX_LENGTH, unique=True, validators=[validate_folder],
                              help_text=_("The folder the team owns, e.g. 'support'; its sub-folders are "
                                          "included unless they have an owner of their own."))
    group = models.ForeignKey(Group, on_delete=models.PROTECT, related_name="owned_folders",
                              verbose_name=_("owning team"),
                              help_text=_("Only this group's editors change the drafts in the folder, and only "
                                          "its publishers decide their reviews."))

    class Meta:
        verbose_name = _("folder owner")
        verbose_name_plural = _("folder owners")
        ordering = ["folder"]
        permissions = [("edit_any_folder", _("May edit and decide in every folder, whoever owns it"))]

    def __str__(self) -> str:
        return f"{self.folder} → {self.group.name}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        # Every path (admin, shell, fixtures) stores the form registry.roles looks up.
        self.folder = normalise_folder(self.folder)
        super().save(*args, **kwargs)

    def clean(self) -> None:
        """The stored form before the uniqueness check: "Support" is the folder "support" (which
        may be owned already), as entries' folders are."""
        self.folder = normalise_folder(self.folder)
