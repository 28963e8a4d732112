"""The importer's bulk writer: the rows `drafts.save_draft` + `services.publish` write, for many entries at once.

Saving and publishing ten thousand entries one by one costs some forty queries each. For the
entries of one kind the importer hands this writer instead, every row is built in memory as
the per-entry services would write it (draft fields and child rows, versions, labels, audit
rows, change-log rows, webhook outbox rows) and written in a few statements per kind by
`flush`, inside the import's transaction and a `changes.service_scope`. So there is still one
change-log row per entry and label, no "database" audit row, and one announcement per
transaction after commit (registry.changes).

It takes only the common case, where the result is the per-entry services' by construction: a
new entry, or an existing one whose labels move without a review or rollout to settle, whose
protected labels the acting user may override (the operator at the command line may), published
by someone who may publish. Anything else (a pending review or a running rollout on the entry, a
label needing an approval, an editor publishing) goes through the services one entry at a
time, so their checks, errors and audit rows stay exactly theirs; so does the rare move of a
label onto an existing version, made after the collected rows are written. tests/registry/test_bulk_import.py
compares the rows both paths write.

Published versions stay immutable: versions are only inserted. Label rows are updated or
inserted with the plain QuerySet methods, bypassing `ServedQuerySet`'s guard and bulk signal on
purpose: this writer records each label's change itself (the guard exists for writes that don't).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.db import connection, models
from django.utils import timezone

from registry import roles
from registry.audit import User, audit_row, write_audit_rows
from registry.authoring.drafts import (
    PROMPT_FIELDS,
    RESOURCE_FIELDS,
    TEMPLATE_FIELDS,
    argument_rows,
    assign_fields,
    message_rows,
    remember_children,
    resources_by_uri,
    variable_rows,
)
from registry.authoring.listing import list_changed, listing_of
from registry.authoring.snapshots import Payloads, content_hash, diff_snapshots, snapshot_of
from registry.changes import record_changes, service_scope
from registry.conf import max_upload_bytes
from registry.errors import ContentTooLarge, RegistryError
from registry.formats.folders import normalise_folder
from registry.formats.uris import normalize_uri, normalize_uri_template
from registry.kinds import KINDS
from registry.models import (
    AuditAction,
    AuditEntry,
    Prompt,
    PromptArgument,
    PromptMessage,
    Resource,
    ResourceTemplate,
    ReviewRequest,
    ReviewStatus,
    Rollout,
    TemplateVariable,
    VersionedEntry,
)
from registry.models.base import label_name_validator, served_key_of, served_projection
from registry.release import argument_guard, services
from registry.release.uses import record_uses
from registry.storage import blobs as content

CHUNK = 500  # rows per statement / keys per IN (...)
_FIELDS = {"prompt": PROMPT_FIELDS, "resource": RESOURCE_FIELDS, "template": TEMPLATE_FIELDS}
# Child relation -> (model, foreign key column name) replaced by a draft save.
_CHILDREN: dict[str, dict[str, tuple[type[models.Model], str]]] = {
    "prompt": {"arguments": (PromptArgument, "prompt_id"), "messages": (PromptMessage, "prompt_id")},
    "resource": {},
    "template": {"variables": (TemplateVariable, "template_id")},
}


@dataclass
class _Label:
    pk: int | None
    name: str
    protected: bool
    version_id: int | None
    version_number: int | None


@dataclass
class _Publish:
    """A version to insert, its publish audit row and the labels to point at it (with their move rows)."""

    entry: VersionedEntry
    version: models.Model
    previous_id: int | None
    published: AuditEntry
    labels: list[tuple[_Label, AuditEntry]] = field(default_factory=list)


def _chunks(items: list[Any]) -> Iterable[list[Any]]:
    for start in range(0, len(items), CHUNK):
        yield items[start:start + CHUNK]


def _audit(entry: VersionedEntry, action: str, acting_user: User, actor: str, **fields: Any) -> AuditEntry:
    """The row `audit.write_audit` would insert (unsaved; written with the others in bulk)."""
    return audit_row(entry=entry, action=action, acting_user=acting_user, actor=actor, **fields)


def _update_rows(model: type[models.Model], rows: list[models.Model], names: list[str]) -> None:
    """UPDATE each row's `names` columns by primary key: one prepared statement, many parameter sets."""
    if not rows:
        return
    meta = model._meta
    fields = [meta.get_field(name) for name in names]
    quote = connection.ops.quote_name
    columns = ", ".join(f"{quote(f.column)} = %s" for f in fields)  # type: ignore[union-attr, arg-type]
    sql = f"UPDATE {quote(meta.db_table)} SET {columns} WHERE {quote(meta.pk.column)} = %s"  # type: ignore[arg-type]
    params = [[f.get_db_prep_save(getattr(row, f.attname), connection) for f in fields] + [row.pk]  # type: ignore[union-attr]
              for row in rows]
    with connection.cursor() as cursor:
        for chunk in _chunks(params):
            cursor.executemany(sql, chunk)


class BulkWriter:
    """Collects one kind's draft saves and publishes in memory; `flush` writes them."""

    def __init__(self, kind: str, entries: Iterable[VersionedEntry], *, labels_wanted: Mapping[int, list[str]],
                 publish: bool, note: str, acting_user: User, actor: str,
                 override_reason: str | None) -> None:
        self.kind = kind
        self.spec = KINDS[kind]
        self.publish_mode = publish
        self.note = note
        self.acting_user = acting_user
        self.actor = actor
        self.override_reason = override_reason
        self.drafts: list[VersionedEntry] = []
        self.children: dict[int, dict[str, list[models.Model]]] = {}  # entry pk -> relation -> new rows
        self.publishes: list[_Publish] = []
        self.audits: list[AuditEntry] = []  # in the order the services would write them
        self.payloads: Payloads = {}
        self.edits: dict[int, tuple[dict[str, Any] | None, list[dict[str, Any]]]] = {}  # pk -> (draft before, diff)
        self.labels: dict[int, dict[str, _Label]] = {}
        self.later_moves: list[tuple[VersionedEntry, str, int, str]] = []  # (entry, label, version number, where)
        self.eligible = self._eligible(list(entries), labels_wanted)

    # ------------------------------------------------------------------ which entries it takes
    def _eligible(self, entries: list[VersionedEntry], labels_wanted: Mapping[int, list[str]]) -> set[int]:
        ids = [entry.pk for entry in entries]
        if not self.publish_mode:
            return set(ids)
        if not ids or not services.can_publish(self.acting_user, entries[0]):
            return set()  # the services say why, entry by entry
        busy: set[int] = set()
        for chunk in _chunks(ids):
            busy.update(ReviewRequest.objects.filter(entry_kind=self.kind, entry_id__in=chunk,
                                                     status=ReviewStatus.PENDING).values_list("entry_id", flat=True))
            busy.update(Rollout.objects.filter(entry_kind=self.kind, entry_id__in=chunk)
                        .values_list("entry_id", flat=True))
            for entry_id, pk, name, protected, version_id, number in (
                    self.spec.label_model.objects.filter(entry_id__in=chunk)
                    .values_list("entry_id", "pk", "name", "protected", "version_id", "version__number")):
                self.labels.setdefault(entry_id, {})[name] = _Label(pk, name, protected, version_id, number)
        eligible = set()
        for entry_id in ids:
            if entry_id not in busy and self._may_point(entry_id, labels_wanted.get(entry_id, ())):
                eligible.add(entry_id)
        return eligible

    def _may_point(self, entry_id: int | None, labels: Iterable[str]) -> bool:
        """Whether every protected label among `labels` may move by the override the acting user has."""
        current = self.labels.get(entry_id, {}) if entry_id is not None else {}
        protected_names = services.protected_label_names()
        if not any(current[name].protected if name in current else name in protected_names for name in labels):
            return True
        return (bool((self.override_reason or "").strip() or self.acting_user is None)
                and services.can_override(self.acting_user))

    def takes(self, entry: VersionedEntry | None, labels: list[str]) -> bool:
        """Whether this writer saves and publishes `entry`, None for a new one (else the per-entry services do)."""
        if entry is not None:
            return entry.pk is not None and entry.pk in self.eligible
        if not self.publish_mode:
            return True
        return services.can_publish(self.acting_user, self.spec.entry_model()) and self._may_point(None, labels)

    def label_points_at(self, entry: VersionedEntry) -> dict[str, int | None]:
        """Label name -> version pk, as read when the writer was made (publish mode)."""
        return {name: row.version_id for name, row in self.labels.get(entry.pk, {}).items()}

    # ------------------------------------------------------------------ drafts
    def save_draft(self, entry: VersionedEntry, data: Mapping[str, Any], *, note: str) -> list[dict[str, Any]]:
        """What `drafts.save_draft` does to an existing entry, in memory; returns the audited field diff.

        The entry's row was locked and read, with its child rows, in this transaction (importer). A
        new entry (no pk) is inserted at once, as `save` would (its child rows wait for `flush`)."""
        created = entry.pk is None
        before, before_folder = (None, "") if created else (snapshot_of(entry), entry.folder)
        after_folder = normalise_folder(data["folder"]) if "folder" in data else entry.folder
        refusal = roles.folder_refusal(self.acting_user, [after_folder] if created else [before_folder, after_folder],
                                       entry=entry, attempted="import")
        if refusal is not None:  # as drafts.save_draft (the importer asks first and reports a problem)
            raise refusal
        entry.updated_by = self.actor
        assign_fields(entry, data, _FIELDS[self.kind])
        if created:
            with service_scope():
                entry.save()  # its pk names its child rows, version and audit rows; a new entry serves nothing
        else:
            entry.tags = ", ".join(sorted(entry.tag_set))  # as VersionedEntry.save
            entry.revision = (entry.revision or 0) + 1
            entry.updated_at = timezone.now()
        replaced: dict[str, list[Any]] = {}  # relation -> its new rows (of that relation's model)
        if isinstance(entry, Resource):
            entry.uri = normalize_uri(entry.uri)
        elif isinstance(entry, ResourceTemplate):
            entry.uri_template = normalize_uri_template(entry.uri_template)
            if "variables" in data:
                replaced["variables"] = sorted(variable_rows(entry, data["variables"]), key=lambda v: v.name)
        elif isinstance(entry, Prompt):
            if "arguments" in data:
                replaced["arguments"] = argument_rows(entry, data["arguments"])
            if "messages" in data:
                linked = resources_by_uri({m["resource_uri"] for m in data["messages"] if m.get("resource_uri")})
                replaced["messages"] = message_rows(entry, data["messages"], linked)
        for relation, rows in replaced.items():
            remember_children(entry, relation, rows)
        self.drafts.append(entry)
        self.children[entry.pk] = replaced
        changes = diff_snapshots(before, snapshot_of(entry))
        self.edits[entry.pk] = (before, changes)
        if changes or created:
            self.audits.append(_audit(entry, AuditAction.CREATE if created else AuditAction.EDIT, self.acting_user,
                                      self.actor, note=note, changes=changes))
        if entry.folder != before_folder:  # as drafts.record_folder_change: a row of its own
            moved = [{"field": "folder", "before": before_folder, "after": entry.folder}]
            self.audits.append(_audit(entry, AuditAction.FOLDER_MOVED, self.acting_user, self.actor, note=note,
                                      changes=moved))
            changes = [*changes, *moved]
        return changes

    # ------------------------------------------------------------------ publishing
    def publish(self, entry: VersionedEntry, labels: list[str], *, newest: tuple[int, int, str] | None) -> int:
        """What `services.publish` does, in memory; returns the new version's number.

        The diffs against earlier versions are filled in by `flush`, which reads those snapshots at once."""
        payloads: Payloads = {}
        snapshot = snapshot_of(entry, payloads)
        self.payloads.update(payloads)
        number = newest[1] + 1 if newest else 1
        version = self.spec.version_model(
            entry=entry, number=number, parent_id=newest[0] if newest else None, snapshot=snapshot,
            listing=listing_of(self.kind, snapshot), content_hash=content_hash(snapshot), change_note=self.note,
            author=self.acting_user if getattr(self.acting_user, "pk", None) else None, author_name=self.actor)
        published = _audit(entry, AuditAction.PUBLISH, self.acting_user, self.actor, note=self.note,
                           from_version=newest[1] if newest else None, to_version=number)
        plan = _Publish(entry, version, newest[0] if newest else None, published)
        self.audits.append(published)
        current = self.labels.get(entry.pk, {})
        protected_names = services.protected_label_names()
        for name in labels:
            label_name_validator(name)
            row = current.get(name) or _Label(None, name, name in protected_names, None, None)
            if row.protected:
                reason = (self.override_reason or "").strip() or services.OPERATOR_OVERRIDE
                self.audits.append(_audit(entry, AuditAction.OVERRIDE, self.acting_user, self.actor, note=reason,
                                          label=name, from_version=row.version_number, to_version=number))
            move = _audit(entry, AuditAction.LABEL_MOVE, self.acting_user, self.actor, note=self.note,
                          label=name, from_version=row.version_number, to_version=number)
            self.audits.append(move)
            plan.labels.append((row, move))
        self.publishes.append(plan)
        return number

    def _fill_diffs(self) -> list[tuple[str, str, str, bool]]:
        """Each publish's and label move's diff against what came before; returns the change rows."""
        wanted = sorted({pk for plan in self.publishes for pk in
                         [plan.previous_id, *(row.version_id for row, _ in plan.labels)] if pk is not None})
        snapshots: dict[int, dict[str, Any]] = {}
        for chunk in _chunks(wanted):
            snapshots.update(self.spec.version_model.objects.filter(pk__in=chunk)
                             .values_list("pk", "snapshot"))
        changes = []
        for plan in self.publishes:
            after = plan.version.snapshot  # type: ignore[attr-defined]
            diffs: dict[int | None, list[dict[str, Any]]] = {}  # version pk -> its diff to `after`

            def diff_from(pk: int | None, *, plan: _Publish = plan, after: Any = after,
                          diffs: dict[int | None, list[dict[str, Any]]] = diffs) -> list[dict[str, Any]]:
                """The same diff is often asked for twice (publish and label move from the version the
                label served, which the draft was usually equal to): compute it once, copy it after."""
                if pk not in diffs:
                    before = snapshots.get(pk) if pk is not None else None
                    edit = self.edits.get(plan.entry.pk)
                    diffs[pk] = edit[1] if edit is not None and before is not None and edit[0] == before \
                        else diff_snapshots(before, after)
                return [dict(change) for change in diffs[pk]]

            plan.published.changes = diff_from(plan.previous_id)
            for row, move in plan.labels:
                move.changes = diff_from(row.version_id)
                before = snapshots.get(row.version_id) if row.version_id is not None else None
                changes.append((self.kind, plan.entry.key, row.name,
                                list_changed(self.kind, before, after)))
        return changes

    def move_label_later(self, entry: VersionedEntry, label: str, version_number: int, *, location: str) -> None:
        """Point `label` at an existing version through `services.move_label` once the drafts are written."""
        self.later_moves.append((entry, label, version_number, location))

    # ------------------------------------------------------------------ writing
    def flush(self, problems: list[str], refused: list[Any] | None = None) -> None:
        """Write everything collected: bytes first, then drafts, versions, labels, audit and change rows;
        then the label moves onto existing versions (a refused one becomes a problem, as in the importer)."""
        maps: dict[str, Any] = {}  # label -> its snippet rows, read once for the whole batch
        for plan in self.publishes:  # what services._point_label judges per label (argument_guard)
            number: int = plan.version.number  # type: ignore[attr-defined]
            for row, _move in plan.labels:
                gaps = argument_guard.entry_problems(self.spec.name, plan.entry.key, row.name, plan.version, maps)
                if gaps:
                    problems.append(" ".join(argument_guard.entry_refusal(plan.entry.key, row.name, number, gaps)))
        if self.drafts or self.publishes:
            with service_scope():
                self._write_drafts()
                changes = self._fill_diffs()
                self._write_publishes()
                write_audit_rows(self.audits, batch_size=CHUNK)
                if changes:
                    record_changes(changes)
        for entry, label, number, location in self.later_moves:
            try:
                services.move_label(entry, label=label, version_number=number, acting_user=self.acting_user,
                                    note=self.note, actor=self.actor, override_reason=self.override_reason)
            except RegistryError as exc:
                problems.append(f"{location}: {exc.message}")
                if refused is not None and getattr(exc, "audit", None) is not None:
                    refused.append(exc)  # audited by the importer once the import has rolled back
        self.drafts, self.children, self.publishes, self.audits, self.payloads, self.edits = [], {}, [], [], {}, {}
        self.later_moves = []

    def _write_drafts(self) -> None:
        if not self.drafts:
            return
        pending = [row for entry in self.drafts for rows in self.children[entry.pk].values() for row in rows]
        blobs = [row.__dict__["_stored_bytes"][1] for row in [*self.drafts, *pending] if _pending_bytes(row)]
        if blobs:
            limit = max_upload_bytes()
            for blob in blobs:
                if len(blob) > limit:
                    raise ContentTooLarge(len(blob), limit)
            content.put_many(blobs)
        model = self.spec.entry_model
        names = [f.name for f in model._meta.concrete_fields
                 if not f.primary_key and f.name not in ("created_at", "archived_at")]
        _update_rows(model, self.drafts, names)  # type: ignore[arg-type]
        for relation, (child_model, column) in _CHILDREN[self.kind].items():
            owners = [entry for entry in self.drafts if relation in self.children[entry.pk]]
            for chunk in _chunks([entry.pk for entry in owners]):
                # Child rows have no signals or dependants: delete them as `.delete()` would, without reading them.
                child_model._base_manager.filter(**{f"{column}__in": chunk})._raw_delete(connection.alias)
            rows = [row for entry in owners for row in self.children[entry.pk][relation]]
            child_model.objects.bulk_create(rows, batch_size=CHUNK)  # type: ignore[attr-defined]

    def _write_publishes(self) -> None:
        if not self.publishes:
            return
        content.put_many([raw for raw in self.payloads.values() if raw is not None])  # as store_payloads
        content.check_stored(sha for sha, raw in self.payloads.items() if raw is None)
        versions = self.spec.version_model.objects.bulk_create([p.version for p in self.publishes], batch_size=CHUNK)
        for version in versions:  # bulk_create sends no post_save: index who uses what as every publish does
            record_uses(self.spec.name, version)
        label_model = self.spec.label_model
        moved: list[Any] = []
        created: list[Any] = []
        now = timezone.now()
        for plan in self.publishes:
            # What ReleaseLabel.save() keeps on the row: cold list pages order and find entries by it.
            key = served_key_of(plan.version.listing, plan.version.snapshot)  # type: ignore[attr-defined]
            served = served_projection(plan.version)
            for row, _move in plan.labels:
                label = label_model(pk=row.pk, entry=plan.entry, name=row.name, protected=row.protected,
                                    version=plan.version, moved_by=self.actor, moved_at=now, served_key=key,
                                    served=served)
                (moved if row.pk is not None else created).append(label)
        _update_rows(label_model, moved, ["version", "moved_by", "moved_at", "served_key", "served"])
        if created:  # the plain bulk_create: no served_rows_bulk_created, each label's change is recorded here
            models.QuerySet(label_model).bulk_create(created, batch_size=CHUNK)


def _pending_bytes(row: Any) -> bool:
    """Whether `row` holds assigned bytes not yet in the content store (StoredBytesMixin)."""
    pending = row.__dict__.get("_stored_bytes")
    return pending is not None and bool(pending[2]) and pending[0] == getattr(row, "data_sha256", None)
