"""Shared shape of every versioned registry entry: working copy, versions, release labels.

Prompts, resources and resource templates all follow one pipeline. The entry row (with its
child rows) is the draft editors change freely; publishing freezes a JSON snapshot of it as
the next immutable version; release labels point at versions and are what clients receive.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.validators import RegexValidator
from django.db import connection, models
from django.utils.translation import gettext_lazy as _

from registry.errors import BulkUpdateRefused, ImmutableVersionError
from registry.formats.folders import FOLDER_HELP, FOLDER_MAX_LENGTH, normalise_folder, validate_folder
from registry.formats.uris import lookup_uri, normalize_uri_template
from registry.models.managers import GuardedManager, InsertOnly
from registry.signals import served_rows_bulk_created

if TYPE_CHECKING:
    from django.db.models.fields.related_descriptors import RelatedManager

PRODUCTION = "production"
STAGING = "staging"

label_name_validator = RegexValidator(
    r"^[a-z0-9][a-z0-9_-]{0,39}$",
    "A label name is 1-40 lowercase letters, digits, '-' or '_', e.g. 'production' or 'canary'.",
    code="invalid_label",
)


class ServedQuerySet(models.QuerySet):
    """Refuses bulk updates of the fields that decide what clients are served.

    QuerySet.update() (and bulk_update, which uses it) sends no model signals, so such a change
    would reach no client and leave no audit row (registry.release.receivers). Updates touching only
    other fields (e.g. an MCP client's last_seen_at) are allowed. bulk_create sends
    `served_rows_bulk_created` instead, which the receivers record. Subclasses name the guarded
    fields in `served_fields`.
    """

    served_fields: frozenset[str] = frozenset()
    # Fields that decide who may change a row (team ownership, registry.roles): refused too, since
    # update() would skip the ownership check and the audit row a move writes.
    governed_fields: frozenset[str] = frozenset()

    def update(self, **kwargs):
        governed = sorted(f for f in kwargs if f in self.governed_fields)
        if governed:
            raise BulkUpdateRefused(
                f"{self.model.__name__}: QuerySet.update() of {', '.join(governed)} is refused because moving "
                "entries to another folder changes which team may edit them, and update() would skip the "
                "ownership check and the audit row. Save each entry with .save() or drafts.save_draft "
                "(the admin, the API and the importer do) so the move is checked and recorded."
            )
        guarded = sorted(f for f in kwargs if f in self.served_fields or f.removesuffix("_id") in self.served_fields)
        if guarded:
            raise BulkUpdateRefused(
                f"{self.model.__name__}: QuerySet.update() of {', '.join(guarded)} is refused because it would "
                "change what MCP clients are served without notifying them or writing the audit log. Save each "
                "object with .save() (or use the registry services: publish, move_label, rollback, set_archived, "
                "set_rollout) so the change is recorded."
            )
        return super().update(**kwargs)

    def bulk_create(self, objs, *args, **kwargs):
        created = super().bulk_create(objs, *args, **kwargs)
        if created:
            served_rows_bulk_created.send(sender=self.model, objs=created)
        return created


class EntryQuerySet(ServedQuerySet):
    served_fields = frozenset({"archived_at"})  # the rest is the draft; clients see versions
    governed_fields = frozenset({"folder"})  # who may edit it (registry.roles); in no snapshot, so no review goes stale


class EntryManager(GuardedManager.from_queryset(EntryQuerySet)):  # type: ignore[misc]
    """EntryQuerySet's rules, in data migrations too (registry/models/managers.py)."""


class LabelQuerySet(ServedQuerySet):
    served_fields = frozenset({"entry", "version", "name", "served"})  # served: what cold pages list

    def of_unarchived_entries(self) -> LabelQuerySet:
        """The label rows of entries not archived: what the catalog, the cold pages and every
        other reader of served rows start from.

        Written as "entry not among the archived ones", not as a join to the entry: an entry row
        holds its whole draft (a resource's text fills a database page per entry), so checking each
        label's entry read a page per row (20k resources on SQLite: a run's keys 51-71 -> 9-16 ms,
        its rows 65-79 -> 38-65 ms; README, Cold start); the archived ids are few and come from the
        index on `archived_at`."""
        entries: Any = self.model._meta.get_field("entry").related_model
        return self.exclude(entry_id__in=entries._base_manager.filter(archived_at__isnull=False).values("pk"))

    def bulk_create(self, objs, *args, **kwargs):
        objs = list(objs)
        for label in objs:  # save() is not called: give each row its served key and projection here
            if not label.served_key:
                label.served_key = served_key_of(label.version.listing, label.version.snapshot)
            if not label.served:
                label.served = served_projection(label.version)
        return super().bulk_create(objs, *args, **kwargs)


class LabelManager(GuardedManager.from_queryset(LabelQuerySet)):  # type: ignore[misc]
    """LabelQuerySet's rules, in data migrations too (registry/models/managers.py)."""


class VersionedEntry(models.Model):
    """Fields every entry has besides its own content."""

    tags = models.CharField(
        _("tags"), max_length=500, blank=True,
        help_text=_("Comma-separated tags. Clients limited to some tags only see entries carrying one of them."),
    )
    # Organisational only (registry/formats/folders.py): not in the snapshot, nothing a client is served.
    folder = models.CharField(
        _("folder"), max_length=FOLDER_MAX_LENGTH, blank=True, default="", db_index=True,
        validators=[validate_folder], help_text=FOLDER_HELP,
    )
    # Indexed: the few archived entries' ids are what served label rows leave out
    # (LabelQuerySet.of_unarchived_entries), read from this index alone.
    archived_at = models.DateTimeField(_("archived at"), null=True, blank=True, editable=False, db_index=True)
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)
    updated_at = models.DateTimeField(_("updated at"), auto_now=True)
    revision = models.PositiveIntegerField(
        _("revision"), default=0, editable=False,
        help_text=_("Draft revision, bumped by every save of the working copy: "
                    "a save based on an older one is refused."),
    )
    updated_by = models.CharField(
        _("updated by"), max_length=150, blank=True, editable=False, help_text=_("Who saved the draft last."),
    )
    # What the last import found the draft to be (registry.portable.unchanged): the digest of the
    # file's data for this entry, valid while `revision` is still `import_revision` (any other save
    # bumps it); `import_version` is the newest version's pk then, when the draft equalled it.
    import_digest = models.CharField(_("import digest"), max_length=64, blank=True, default="", editable=False)
    import_revision = models.PositiveIntegerField(_("import revision"), null=True, blank=True, editable=False)
    import_version = models.PositiveIntegerField(_("import version"), null=True, blank=True, editable=False)

    kind: str = ""  # "prompt", "resource" or "template"; set by each concrete model

    objects = EntryManager()
    # The reverse relations of every concrete entry (its version and label models' `entry`); of Any
    # model, as an abstract model has no fields the stubs know of (`version`, `entry`).
    versions: RelatedManager[Any]
    labels: RelatedManager[Any]

    class Meta:
        abstract = True

    def save(self, *args, **kwargs) -> None:
        self.tags = ", ".join(sorted(self.tag_set))
        self.folder = normalise_folder(self.folder)
        if kwargs.get("update_fields") is None:  # a save of the whole working copy is a new draft revision
            self.revision = (self.revision or 0) + 1
        super().save(*args, **kwargs)

    @property
    def tag_set(self) -> frozenset[str]:
        return frozenset(t.strip().lower() for t in self.tags.split(",") if t.strip())

    @property
    def key(self) -> str:
        """The identifier clients use: a prompt name, a resource URI or a URI template."""
        raise NotImplementedError


class ImmutableQuerySet(InsertOnly):
    """Bulk updates and deletes would bypass the per-row guard, so they are refused too."""

    overwrite_refused = "Published versions cannot be changed."


    def delete(self):
        raise ImmutableVersionError("Published versions cannot be deleted.")

    def for_entry(self, entry: VersionedEntry) -> ImmutableQuerySet:
        return self.filter(entry=entry).order_by("-number")


class VersionManager(GuardedManager.from_queryset(ImmutableQuerySet)):  # type: ignore[misc]
    """ImmutableQuerySet's rules, in data migrations too (registry/models/managers.py)."""


class EntryVersion(models.Model):
    """A published, frozen snapshot of an entry. Insert-only."""

    number = models.PositiveIntegerField(_("number"))
    snapshot = models.JSONField(
        _("snapshot"), help_text=_("Everything clients receive from this version; bytes by SHA-256."),
    )
    listing = models.JSONField(
        _("listing"), default=dict, editable=False,
        help_text=_("What lists and completion need (registry/authoring/listing.py), "
                    "so serving never loads message bodies."),
    )
    content_hash = models.CharField(
        _("content hash"), max_length=64, help_text=_("SHA-256 of the canonical snapshot."),
    )
    change_note = models.TextField(_("change note"))
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("author"), null=True, blank=True, on_delete=models.SET_NULL,
        related_name="+",
    )
    author_name = models.CharField(
        _("author name"), max_length=150, help_text=_("Who published it, kept if the user is deleted."),
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    objects = VersionManager()
    entry: VersionedEntry  # each concrete version model's own foreign key to its entry model

    class Meta:
        abstract = True
        ordering = ["-number"]

    def __str__(self) -> str:
        return f"{self.entry.key} v{self.number}"

    def save(self, *args, **kwargs) -> None:
        if not self._state.adding:
            raise ImmutableVersionError(f"{self} is published and cannot be changed; publish a new version.")
        super().save(*args, **kwargs)

    def delete(self, *args, **kwargs):
        raise ImmutableVersionError(f"{self} is published and cannot be deleted.")


def served_key_of(listing: dict | None, snapshot: dict | None) -> str:
    """The key a version is served under, as the catalog has it: its listed URI template, URI
    (both normalised) or name; from the snapshot for versions written without a listing."""
    for source in ((listing or {}).get("item") or {}, snapshot or {}):
        if source.get("uriTemplate"):
            return normalize_uri_template(source["uriTemplate"])
        if source.get("uri"):
            return lookup_uri(source["uri"])
        if source.get("name"):
            return source["name"]
    return ""


def _in_jsonb_order(value: Any) -> Any:
    """`value` with every object's keys in the order PostgreSQL's jsonb returns them (shorter keys
    first, equal lengths by their UTF-8 bytes), as a listing read from a jsonb column has them:
    the projection must list keys in the order a whole build does, byte for byte (pinned by
    tests/mcp_endpoint/test_pagination_cold.py on PostgreSQL)."""
    if isinstance(value, dict):
        ordered = sorted(value, key=lambda key: (len(key.encode()), key.encode()))
        return {key: _in_jsonb_order(value[key]) for key in ordered}
    if isinstance(value, list):
        return [_in_jsonb_order(item) for item in value]
    return value


def served_projection(version: Any) -> str:
    """What a label row keeps of the version it points at, for cold list pages to read label rows
    alone (registry/serving/catalogs.py): JSON of [version id, number, creation time as SQLite
    stores it (UTC, "YYYY-MM-DD HH:MM:SS[.ffffff]"), listing without completion's suggestions].
    A version row carries its whole snapshot (a prompt's fills most of a database page), so
    reading 20k of them for their listings was most of a cold walk's database time
    (bench/cold_listing.py). Versions are immutable, so the projection goes stale only when the
    row is pointed elsewhere; readers compare its version id with the row's and read the version
    where they differ (a row written around the model)."""
    listing: Any = {k: v for k, v in (version.listing or {}).items() if k != "suggestions"}
    if connection.vendor == "postgresql":  # as the version's listing reads back, so both paths list alike
        listing = _in_jsonb_order(listing)
    created = version.created_at
    stored = ""
    if isinstance(created, datetime):  # str() of the naive UTC value: what Django's SQLite backend stores
        stored = str((created.astimezone(UTC) if created.tzinfo is not None else created).replace(tzinfo=None))
    return json.dumps([version.pk, version.number, stored, listing], ensure_ascii=False, separators=(",", ":"))


def project_loaded_label(sender: Any, instance: ReleaseLabel, raw: bool = False, **kwargs: Any) -> None:
    """pre_save of label rows: a raw save (loaddata, a fixture restore) writes the row as dumped,
    projection included, but the dump may not keep what the version holds (Django's serialiser
    keeps milliseconds of its creation time, not microseconds), so the projection is taken again
    from the version as loaded, or dropped ("": read from the version) if it is not loaded yet."""
    if not raw:
        return
    model: Any = type(instance)
    version = model._meta.get_field("version").related_model._default_manager.filter(
        pk=getattr(instance, "version_id", None)).first()
    instance.served = served_projection(version) if version is not None else ""


class ReleaseLabel(models.Model):
    """A named pointer ('production', 'staging', custom) from an entry to one of its versions."""

    name = models.CharField(_("name"), max_length=40, validators=[label_name_validator])
    protected = models.BooleanField(
        _("protected"),
        default=False, help_text=_("Moving a protected label needs an approved review.")
    )
    moved_at = models.DateTimeField(_("moved at"), auto_now=True)
    moved_by = models.CharField(_("moved by"), max_length=150, blank=True)
    served_key = models.CharField(
        _("served key"),
        max_length=2048, blank=True, default="", editable=False,
        help_text="The served version's name or URI (served_key_of), kept on the label row so list "
                  "pages can be read from the database in key order by an index (registry/serving/pages.py).",
    )

    served = models.TextField(
        _("served projection"), blank=True, default="", editable=False,
        help_text="What the version lists, kept on the label row (served_projection), so cold list pages "
                  "read label rows alone, not the version rows with their snapshots.",
    )

    objects = LabelManager()
    # Each concrete label model's own foreign keys, to its entry and version models.
    entry: VersionedEntry
    version: EntryVersion

    class Meta:
        abstract = True
        ordering = ["name"]
        # entry last: the pages' keyset reads (served key, entry id) from the index alone, in order.
        indexes = [models.Index(fields=["name", "served_key", "entry"], name="%(class)s_by_key")]

    def __str__(self) -> str:
        return f"{self.name} → v{self.version.number}"

    def save(self, *args, **kwargs) -> None:
        fields = kwargs.get("update_fields")
        if fields is None or {"version", "version_id"} & set(fields):
            self.served_key = served_key_of(self.version.listing, self.version.snapshot)
            self.served = served_projection(self.version)
            if fields is not None:
                kwargs["update_fields"] = [*fields, "served_key", "served"]
        super().save(*args, **kwargs)
