"""Model-signal receivers: every change to what clients are served is recorded, whoever makes it.

These receivers are the one recorder of the change log: every save and delete of the models
that decide what clients receive is recorded here, in the same transaction, whoever made it (the
services, the admin, an operator in `manage.py shell` with `label.version = v1; label.save()`, a
script); the services audit their own changes, and these receivers audit the rest:

- release labels: created, moved (version changed) or deleted; a snippet's also records a change of
  every entry label row that follows it there (its dependents: what they serve changes with it);
- versions: inserted outside a service (a hand-made publish; nothing is served until a label
  points at it, so it is audited, and announced so caches re-read);
- percentage rollouts: started, changed or ended;
- entries: archived or restored (an archived entry is served to nobody), and deletions;
- drafts (an entry or one of its argument, message or variable rows) saved outside a service:
  the open requests the change makes stale are stamped, audited and their requesters mailed by
  the one stale rule (registry/release/stale.py), as a service's audited edit does;
- MCP clients: label, scope, activity, expiry or token changed: cached tokens are dropped
  after commit, so the new scope applies at once in this process (other processes within
  registry.serving.clients.TOKEN_CACHE_S).

Each records a change-log row (registry.changes.record_change; inside a service it joins the
service's announcement) and, only outside a service (changes.in_service), an audit row with
actor "database". Fixture loading (raw=True) is ignored: loaddata restores state
as it was recorded elsewhere.

Bulk QuerySet.update() sends no signals, so it is refused on the guarded fields
(registry.models.base.ServedQuerySet); bulk_create of labels and rollouts is recorded from
the queryset's own signal (a "*" change per label name: every entry of the kind is re-read).
Data migrations use historical models, which these receivers do not see: a data migration
that changes served content must record it itself (registry.changes.record_change); running
servers then catch up from the change log.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.db import transaction
from django.db.models.signals import post_delete, post_save, pre_save

from registry.audit import write_audit
from registry.authoring.listing import list_changed
from registry.authoring.snapshots import diff_snapshots
from registry.changes import in_service, record_change, recording
from registry.models import (
    PRODUCTION,
    AuditAction,
    McpClient,
    Prompt,
    PromptArgument,
    PromptLabel,
    PromptMessage,
    PromptVersion,
    ReleaseLabel,
    Resource,
    ResourceLabel,
    ResourceTemplate,
    ResourceTemplateLabel,
    ResourceTemplateVersion,
    ResourceVersion,
    Rollout,
    Snippet,
    SnippetArgument,
    SnippetLabel,
    SnippetVersion,
    TemplateVariable,
    VersionedEntry,
)
from registry.models.reviews import rollout_diff
from registry.release import stale
from registry.release.uses import record_dependent_changes, record_uses
from registry.serving.credentials import served_changed
from registry.signals import served_rows_bulk_created

DATABASE_ACTOR = "database"
OUTSIDE_NOTE = "Saved outside the registry services (shell, script or direct database write)."
ENTRIES = (Prompt, Resource, ResourceTemplate, Snippet)
LABELS = (PromptLabel, ResourceLabel, ResourceTemplateLabel, SnippetLabel)
VERSIONS = (PromptVersion, ResourceVersion, ResourceTemplateVersion, SnippetVersion)
BEFORE = "_registry_stored"  # instance attribute: the stored row's relevant values, read in pre_save


def _together(receiver: Any) -> Any:
    """Run a receiver in a recording scope: in autocommit (a shell) its change row, audit row and
    announcement go together and the announcement waits for the commit; inside a service it joins
    the service's scope and announcement."""

    def wrapper(*args: Any, **kwargs: Any) -> None:
        with recording(savepoint=False):
            receiver(*args, **kwargs)

    wrapper.__name__ = wrapper.__qualname__ = receiver.__name__
    wrapper.__doc__ = receiver.__doc__
    return wrapper


def _audit(entry_kind: str, entry_key: str, entry_id: int | None, action: str, **fields: Any) -> None:
    """An audit row for a change made outside the services (they audit their own)."""
    if in_service():
        return
    write_audit(actor=DATABASE_ACTOR, action=action, entry_kind=entry_kind, entry_key=entry_key, entry_id=entry_id,
                note=fields.pop("note", OUTSIDE_NOTE), **fields)


def _stored(sender: Any, instance: Any, fields: tuple[str, ...], update_fields: Any) -> dict[str, Any] | None:
    """The stored values of `fields` before this save, or None for an insert (or fields not saved)."""
    if instance._state.adding or instance.pk is None:
        return None
    if update_fields is not None and not set(update_fields) & {f.removesuffix("_id") for f in fields}:
        return None
    return sender._base_manager.filter(pk=instance.pk).values(*fields).first()


# ----------------------------------------------------------------------------------------- labels
def label_saving(sender: Any, instance: ReleaseLabel, raw: bool = False, update_fields: Any = None,
                 **kwargs: Any) -> None:
    if not raw:
        # What it served before, in one read: the move's list_changed and audit need the old version.
        setattr(instance, BEFORE, _stored(sender, instance, ("version_id", "name", "version__number",
                                                             "version__snapshot"), update_fields))


@_together
def label_saved(sender: Any, instance: ReleaseLabel, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if raw:
        return
    stored = getattr(instance, BEFORE, None)
    if not created and stored is None:
        return  # only other fields were saved
    before_id = stored["version_id"] if stored else None
    renamed_from = stored["name"] if stored and stored["name"] != instance.name else None
    if before_id == instance.version_id and renamed_from is None:  # type: ignore[attr-defined]
        return
    entry = instance.entry
    version = instance.version
    if renamed_from is not None:  # the old name no longer serves anything; the new one is new
        record_change(kind=entry.kind, key=entry.key, label=renamed_from, list_changed=True)
        _audit(entry.kind, entry.key, entry.pk, AuditAction.DELETE, label=renamed_from,
               from_version=version.number, note=f"Renamed the label '{renamed_from}' to '{instance.name}'. "
               + OUTSIDE_NOTE)
        before_id = None
    _record_dependents(entry, instance.name, renamed_from)
    before_number = stored["version__number"] if stored and before_id else None
    before_snapshot = stored["version__snapshot"] if stored and before_id else None
    record_change(kind=entry.kind, key=entry.key, label=instance.name,
                  list_changed=list_changed(entry.kind, before_snapshot, version.snapshot))
    if in_service():
        return  # the service audits the move itself
    backwards = before_number is not None and version.number < before_number
    _audit(entry.kind, entry.key, entry.pk, AuditAction.ROLLBACK if backwards else AuditAction.LABEL_MOVE,
           label=instance.name, from_version=before_number, to_version=version.number,
           changes=diff_snapshots(before_snapshot, version.snapshot))


def _record_dependents(entry: Any, *labels: str | None) -> None:
    """A snippet's label moved (or went, or the snippet was archived or restored): its dependents' changes."""
    if entry.kind == "snippet":
        record_dependent_changes(entry.key, *labels)


@_together
def label_deleted(sender: Any, instance: ReleaseLabel, **kwargs: Any) -> None:
    entry = instance.entry
    record_change(kind=entry.kind, key=entry.key, label=instance.name, list_changed=True)
    _record_dependents(entry, instance.name)
    _audit(entry.kind, entry.key, entry.pk, AuditAction.DELETE, label=instance.name,
           from_version=instance.version.number,
           note=f"Deleted the label '{instance.name}'. {OUTSIDE_NOTE}")


@_together
def labels_bulk_created(sender: Any, objs: list[ReleaseLabel], **kwargs: Any) -> None:
    """bulk_create sends no post_save: record one change per label name, for every entry of the kind."""
    kind = sender._meta.get_field("entry").related_model.kind
    if kind == "snippet":
        for label in objs:
            _record_dependents(label.entry, label.name)
    for name, count in sorted(Counter(o.name for o in objs).items()):
        record_change(kind=kind, key="*", label=name, list_changed=True)
        _audit(kind, f"* ({count} entries)", None, AuditAction.LABEL_MOVE, label=name,
               note=f"Created {count} '{name}' label(s) in bulk. {OUTSIDE_NOTE}")


# --------------------------------------------------------------------------------------- versions
@_together
def version_saved(sender: Any, instance: Any, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if raw or not created:
        return
    record_uses(instance.entry.kind, instance)  # who uses what (registry/release/uses.py), on every path
    if in_service():
        return  # the publishing service records the labels it moves
    entry = instance.entry
    record_change(kind=entry.kind, key=entry.key)
    _audit(entry.kind, entry.key, entry.pk, AuditAction.PUBLISH, to_version=instance.number,
           changes=diff_snapshots(None, instance.snapshot))


# --------------------------------------------------------------------------------------- rollouts
def _label_version(kind: str, entry_id: int, label: str) -> int | None:
    from registry.kinds import KINDS

    return (KINDS[kind].label_model._base_manager
            .filter(entry_id=entry_id, name=label).values_list("version__number", flat=True).first())


def rollout_saving(sender: Any, instance: Rollout, raw: bool = False, update_fields: Any = None,
                   **kwargs: Any) -> None:
    if not raw:
        setattr(instance, BEFORE, _stored(sender, instance, ("candidate_version", "percent", "label"), update_fields))


def _record_rollout_dependents(rollout: Rollout, *labels: str | None) -> None:
    """A snippet's rollout changed what its dependents serve part of their clients: their changes."""
    if rollout.entry_kind == "snippet":
        record_dependent_changes(rollout.entry_key, rollout.label, *labels)


@_together
def rollout_saved(sender: Any, instance: Rollout, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if raw:
        return
    stored = getattr(instance, BEFORE, None)
    if not created and (stored is None or stored == {"candidate_version": instance.candidate_version,
                                                     "percent": instance.percent, "label": instance.label}):
        return
    if stored is not None and stored["label"] != instance.label:
        record_change(kind=instance.entry_kind, key=instance.entry_key, label=stored["label"], list_changed=True)
    record_change(kind=instance.entry_kind, key=instance.entry_key, label=instance.label, list_changed=True)
    _record_rollout_dependents(instance, stored["label"] if stored else None)
    _audit(instance.entry_kind, instance.entry_key, instance.entry_id, AuditAction.ROLLOUT_CHANGED,
           label=instance.label, from_version=_label_version(instance.entry_kind, instance.entry_id, instance.label),
           to_version=instance.candidate_version,
           changes=rollout_diff((stored["candidate_version"], stored["percent"]) if stored else (None, 0),
                                (instance.candidate_version, instance.percent)),
           note=f"Rollout of v{instance.candidate_version} on '{instance.label}' at {instance.percent}% of clients. "
                + OUTSIDE_NOTE)


@_together
def rollout_deleted(sender: Any, instance: Rollout, **kwargs: Any) -> None:
    record_change(kind=instance.entry_kind, key=instance.entry_key, label=instance.label, list_changed=True)
    _record_rollout_dependents(instance)
    _audit(instance.entry_kind, instance.entry_key, instance.entry_id, AuditAction.ROLLOUT_CHANGED,
           label=instance.label, from_version=_label_version(instance.entry_kind, instance.entry_id, instance.label),
           to_version=instance.candidate_version,
           changes=rollout_diff((instance.candidate_version, instance.percent), (None, 0)),
           note=f"Ended the rollout of v{instance.candidate_version} on '{instance.label}'. " + OUTSIDE_NOTE)


@_together
def rollouts_bulk_created(sender: Any, objs: list[Rollout], **kwargs: Any) -> None:
    for rollout in objs:
        setattr(rollout, BEFORE, None)
        rollout_saved(sender, rollout, created=True)


# ---------------------------------------------------------------------------------------- entries
def entry_saving(sender: Any, instance: VersionedEntry, raw: bool = False, update_fields: Any = None,
                 **kwargs: Any) -> None:
    if not raw:
        setattr(instance, BEFORE, _stored(sender, instance, ("archived_at", "folder"), update_fields))


@_together
def entry_saved(sender: Any, instance: VersionedEntry, created: bool, raw: bool = False, **kwargs: Any) -> None:
    if not raw and not created:
        _draft_changed(instance.kind, instance.pk)
    stored = None if raw else getattr(instance, BEFORE, None)
    if stored is None:
        return  # a new entry is served only once a label points at it
    if stored["folder"] != instance.folder:  # who may edit it changed (registry.roles): audited as a service's move
        _audit(instance.kind, instance.key, instance.pk, AuditAction.FOLDER_MOVED,
               changes=[{"field": "folder", "before": stored["folder"], "after": instance.folder}])
    if (stored["archived_at"] is None) == (instance.archived_at is None):
        return  # a draft edit: clients see it only once it is published
    record_change(kind=instance.kind, key=instance.key, list_changed=True)
    _record_dependents(instance, PRODUCTION)  # a snippet's dependents on every label
    _audit(instance.kind, instance.key, instance.pk,
           AuditAction.ARCHIVE if instance.archived_at else AuditAction.UNARCHIVE)


@_together
def entry_deleted(sender: Any, instance: VersionedEntry, **kwargs: Any) -> None:
    record_change(kind=instance.kind, key=instance.key, list_changed=True)


# ----------------------------------------------------------------------------------------- drafts
CHILD_ROWS = ((PromptArgument, "prompt", "prompt_id"), (PromptMessage, "prompt", "prompt_id"),
              (TemplateVariable, "template", "template_id"), (SnippetArgument, "snippet", "snippet_id"))


def _draft_changed(kind: str, entry_id: int | None) -> None:
    """A draft saved outside a service (a shell's `prompt.save()`): the one stale rule, as a service's
    audited edit applies it (registry/release/stale.py, on its audit row). Services are left to that
    path; the requests it stamps are never stamped, audited or mailed again."""
    if entry_id is not None and not in_service():
        stale.note_stale_requests(kind, entry_id)


@_together
def child_row_saved(sender: Any, instance: Any, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """An argument, message or variable row is part of its entry's draft."""
    if not raw:
        kind, field = next((kind, field) for model, kind, field in CHILD_ROWS if model is sender)
        _draft_changed(kind, getattr(instance, field))


# ---------------------------------------------------------------------------------------- clients
def _forget_tokens() -> None:
    from registry.serving.clients import forget_cached_tokens

    transaction.on_commit(forget_cached_tokens)


def client_saved(sender: Any, instance: McpClient, created: bool, raw: bool = False, **kwargs: Any) -> None:
    """Drop the token cache when the save changes what the client is served as; the stored row is
    the one registry/serving/credentials.py read before the save (no second query)."""
    if not raw and served_changed(instance):
        _forget_tokens()


def client_deleted(sender: Any, instance: McpClient, **kwargs: Any) -> None:
    _forget_tokens()


def connect() -> None:
    """Connect every receiver to its concrete models (called from RegistryConfig.ready)."""
    for model in LABELS:
        name = model.__name__
        pre_save.connect(label_saving, sender=model, dispatch_uid=f"registry.label_saving.{name}")
        post_save.connect(label_saved, sender=model, dispatch_uid=f"registry.label_saved.{name}")
        post_delete.connect(label_deleted, sender=model, dispatch_uid=f"registry.label_deleted.{name}")
        served_rows_bulk_created.connect(labels_bulk_created, sender=model,
                                         dispatch_uid=f"registry.labels_bulk_created.{name}")
    for version_model in VERSIONS:
        post_save.connect(version_saved, sender=version_model,
                          dispatch_uid=f"registry.version_saved.{version_model.__name__}")
    for entry_model in ENTRIES:
        name = entry_model.__name__
        pre_save.connect(entry_saving, sender=entry_model, dispatch_uid=f"registry.entry_saving.{name}")
        post_save.connect(entry_saved, sender=entry_model, dispatch_uid=f"registry.entry_saved.{name}")
        post_delete.connect(entry_deleted, sender=entry_model, dispatch_uid=f"registry.entry_deleted.{name}")
    for child_model, _kind, _field in CHILD_ROWS:
        post_save.connect(child_row_saved, sender=child_model,
                          dispatch_uid=f"registry.child_row_saved.{child_model.__name__}")
    pre_save.connect(rollout_saving, sender=Rollout, dispatch_uid="registry.rollout_saving")
    post_save.connect(rollout_saved, sender=Rollout, dispatch_uid="registry.rollout_saved")
    post_delete.connect(rollout_deleted, sender=Rollout, dispatch_uid="registry.rollout_deleted")
    served_rows_bulk_created.connect(rollouts_bulk_created, sender=Rollout,
                                     dispatch_uid="registry.rollouts_bulk_created")
    post_save.connect(client_saved, sender=McpClient, dispatch_uid="registry.client_saved")
    post_delete.connect(client_deleted, sender=McpClient, dispatch_uid="registry.client_deleted")
