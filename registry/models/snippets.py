"""Snippets: shared, versioned parts of text that prompts, resources and templates include.

A snippet is an entry like the others (draft, versions, release labels, reviews, audit), but no
MCP client lists or reads it: an entry's text includes it with `{{> name }}` (the snippet version
served on the label the including entry is served from) or `{{> name@3 }}` (version 3), and
clients receive the expanded text (registry/formats/references.py). Its `{{ argument }}`
placeholders are filled from the including prompt's arguments of the same name, so it declares
the arguments it uses, typed like a prompt's.

`EntryUse` is the index of who uses what: one row per (published version, snippet it references
or resource it embeds), written when the version is inserted (registry/release/uses.py), so
"used by" and the dependents of a release are indexed queries, whatever the registry's size.
"""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.models.base import EntryVersion, ReleaseLabel, VersionedEntry
from registry.models.prompts import ArgumentType, argument_name_validator, prompt_name_validator


class Snippet(VersionedEntry):
    name = models.CharField(
        _("name"), max_length=128, unique=True, validators=[prompt_name_validator],
        help_text=_("The name texts include it by: {{> name }}. Cannot change once published."),
    )
    description = models.TextField(
        _("description"), blank=True, help_text=_("What the snippet is for, for the editors who include it."),
    )
    text = models.TextField(
        _("text"), blank=True,
        help_text=_("The shared text, with {{ argument }} placeholders and {{> other-snippet }} references."),
    )

    kind = "snippet"

    class Meta:
        verbose_name = _("snippet")
        verbose_name_plural = _("snippets")
        ordering = ["name"]
        permissions = [("publish_snippet", "Can publish snippet versions, move labels and roll back")]

    def __str__(self) -> str:
        return self.name

    @property
    def key(self) -> str:
        return self.name


class SnippetArgument(models.Model):
    """An argument the snippet's text uses: the including prompt must declare one of the same name."""

    snippet = models.ForeignKey(
        Snippet, verbose_name=_("snippet"), on_delete=models.CASCADE, related_name="arguments",
    )
    position = models.PositiveIntegerField(_("position"), default=0)
    name = models.CharField(_("name"), max_length=64, validators=[argument_name_validator])
    description = models.TextField(_("description"), blank=True)
    type = models.CharField(
        _("type"), max_length=16, choices=ArgumentType.choices, default=ArgumentType.TEXT,
        help_text=_("The type the including prompt's argument of this name must have."),
    )

    class Meta:
        verbose_name = _("snippet argument")
        verbose_name_plural = _("snippet arguments")
        ordering = ["position", "id"]
        constraints = [models.UniqueConstraint(fields=["snippet", "name"], name="unique_snippet_argument")]

    def __str__(self) -> str:
        return self.name


class SnippetVersion(EntryVersion):
    entry = models.ForeignKey(
        Snippet, verbose_name=_("entry"), on_delete=models.PROTECT, related_name="versions",
    )
    parent = models.ForeignKey(
        "self", verbose_name=_("parent"), null=True, blank=True, on_delete=models.PROTECT, related_name="+",
    )

    class Meta(EntryVersion.Meta):
        verbose_name = _("snippet version")
        verbose_name_plural = _("snippet versions")
        constraints = [models.UniqueConstraint(fields=["entry", "number"], name="unique_snippet_version")]


class SnippetLabel(ReleaseLabel):
    entry = models.ForeignKey(
        Snippet, verbose_name=_("entry"), on_delete=models.CASCADE, related_name="labels",
    )
    version = models.ForeignKey(
        SnippetVersion, verbose_name=_("version"), on_delete=models.PROTECT, related_name="labels",
    )

    class Meta(ReleaseLabel.Meta):
        verbose_name = _("snippet label")
        verbose_name_plural = _("snippet labels")
        constraints = [models.UniqueConstraint(fields=["entry", "name"], name="unique_snippet_label")]


class EntryUse(models.Model):
    """One published version (of any kind) using a snippet or a resource.

    A snippet reference is pinned (`pinned`: the version number) or follows the label the including
    entry is served from (None); a prompt version embedding or linking a resource uses that resource
    as it was frozen at publish (no pin to follow). Insert-only, like the versions it indexes."""

    user_kind = models.CharField(_("kind"), max_length=16)  # prompt, resource, template or snippet
    user_entry_id = models.PositiveIntegerField(_("entry"))
    user_version_id = models.PositiveIntegerField(_("version"))
    user_version_number = models.PositiveIntegerField(_("version number"))
    used_kind = models.CharField(_("used kind"), max_length=16)  # snippet or resource
    used_key = models.CharField(_("used"), max_length=2048, help_text=_("The snippet's name or the resource's URI."))
    pinned = models.PositiveIntegerField(_("pinned version"), null=True, blank=True,
                                         help_text=_("Empty: follows the label the including entry is served from."))

    class Meta:
        verbose_name = _("entry use")
        verbose_name_plural = _("entry uses")
        indexes = [models.Index(fields=["used_kind", "used_key"], name="entryuse_by_used"),
                   models.Index(fields=["user_kind", "user_version_id"], name="entryuse_by_version")]

    def __str__(self) -> str:
        pin = f"@{self.pinned}" if self.pinned else ""
        return f"{self.user_kind} version {self.user_version_id} uses {self.used_kind} {self.used_key}{pin}"
