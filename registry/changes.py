"""The change log: recording changes to served content, announcing them once after commit,
and reading them back (catch-up, gaps, replay, pruning).

Every change is written to the change log inside the changing transaction by `record_change`
(one row) or, for the bulk importer that writes around the models, `record_changes`. Who calls
them is one rule: the model-save receivers (registry.release.receivers) record every save that changes
what clients are served (label moves, rollouts, archiving, deletions), whatever made it (a
service, the admin, an import, a shell); the services save models and audit, and record nothing
themselves, so no change is recorded twice.

Changes are announced together per recording scope: a service's transaction
(`service_transaction`, `recording(service=True)`) or a receiver's own (`recording()`), each an
atomic block that registers one `transaction.on_commit` batch when it opens; inner scopes join
the outer one. A rolled-back block takes its registration with it, and the scope ends with the
block, so no batch outlives its transaction; no Django internals are read. A change recorded
outside any scope is announced on its own (after commit, or at once in autocommit).

`in_service()` tells the receivers that a service audits its own changes (they write an audit
row, actor "database", only for changes made outside one).
"""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any, TypeVar

from django.db import transaction
from django.utils import timezone

from registry.conf import registry_settings
from registry.models import ChangeLogEntry
from registry.signals import registry_changed

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Change:
    id: int
    kind: str  # prompt, resource, template
    key: str
    label: str  # "" = every label
    list_changed: bool


@dataclass
class ChangeBatch:
    changes: list[Change] = field(default_factory=list)
    sent: bool = False  # announced already (tests run on_commit callbacks before the transaction ends)

    @property
    def ids(self) -> list[int]:
        return [c.id for c in self.changes]

    def __call__(self) -> None:
        self.sent = True
        announce(self)


_local_generation_lock = threading.Lock()
_generation = 0


def generation() -> int:
    """Increases whenever this process learns of committed changes; caches compare against it."""
    return _generation


def bump_generation() -> int:
    global _generation
    with _local_generation_lock:
        _generation += 1
        return _generation


@dataclass
class _Scope:
    service: bool  # a service: it audits its own changes
    batch: ChangeBatch
    memo: dict[str, Any] = field(default_factory=dict)  # shared by the scopes joined to the outermost


_scope: ContextVar[_Scope | None] = ContextVar("registry_recording_scope", default=None)
F = TypeVar("F", bound=Callable[..., Any])


@contextmanager
def recording(*, service: bool = False, durable: bool = False, savepoint: bool = True) -> Iterator[None]:
    """An atomic block whose recorded changes are announced together after it commits.

    Inside another scope it joins that one (and its batch), and counts as a service if either is;
    `savepoint=False` joins without a savepoint (a receiver: its rows fail or commit with the save)."""
    outer = _scope.get()
    if outer is not None:
        token = _scope.set(_Scope(True, outer.batch, outer.memo)) if service and not outer.service else None
        try:
            with transaction.atomic(durable=durable, savepoint=savepoint):
                yield
        finally:
            if token is not None:
                _scope.reset(token)
        return
    with transaction.atomic(durable=durable, savepoint=savepoint):
        batch = ChangeBatch()
        transaction.on_commit(batch)  # registered at this block's own level: an inner rollback keeps it
        token = _scope.set(_Scope(service, batch))
        try:
            yield
        finally:
            _scope.reset(token)


def record_change(*, kind: str, key: str, label: str = "", list_changed: bool = False) -> Change:
    """Write one change-log row and add it to this scope's announcement."""
    row = ChangeLogEntry.objects.create(entry_kind=kind, entry_key=key, label=label, list_changed=list_changed)
    change = Change(row.pk, kind, key, label, list_changed)
    _announce_after_commit([change])
    return change


def record_changes(items: list[tuple[str, str, str, bool]]) -> list[Change]:
    """`record_change` for many (kind, key, label, list_changed) at once: one INSERT per batch of rows
    (the bulk importer, which writes labels around the models, records its own changes here)."""
    rows = ChangeLogEntry.objects.bulk_create(
        [ChangeLogEntry(entry_kind=kind, entry_key=key, label=label, list_changed=listed)
         for kind, key, label, listed in items], batch_size=500)
    made = [Change(row.pk, row.entry_kind, row.entry_key, row.label, row.list_changed) for row in rows]
    _announce_after_commit(made)
    return made


def _announce_after_commit(made: list[Change]) -> None:
    scope = _scope.get()
    if scope is not None:
        scope.batch.changes.extend(made)
    elif transaction.get_connection().in_atomic_block:
        transaction.on_commit(ChangeBatch(list(made)))
    else:
        announce(ChangeBatch(list(made)))


def scope_memo() -> dict[str, Any] | None:
    """A dict that lives as long as the outermost recording scope (None outside one).

    For what a scope's writers would otherwise read again per row (the webhooks subscribed to an
    audit row's event, read once per publish): it ends with the scope, at commit or rollback alike,
    so nothing read in it outlives the transaction that read it."""
    scope = _scope.get()
    return None if scope is None else scope.memo


def in_service() -> bool:
    """Whether the current code runs inside a registry service (which audits its own changes)."""
    scope = _scope.get()
    return scope is not None and scope.service


def service_scope(*, durable: bool = False) -> Any:
    """`recording(service=True)` without a savepoint of its own: the enclosed block is a service that
    audits its own changes, inside the transaction it runs in (a bulk writer's)."""
    return recording(service=True, durable=durable, savepoint=False)


def service_transaction(func: F) -> F:
    """Run a service in its own recording scope: receivers leave auditing to it, its changes are
    announced together after commit. A refusal leaving it (registry.refusals) is audited
    here once its block has rolled back (again by the path's boundary if an outer block rolls back too)."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            with recording(service=True):
                return func(*args, **kwargs)
        except Exception as exc:
            if getattr(exc, "audit", None) is not None:
                from registry.refusals import record_refusal

                record_refusal(exc)
            raise

    return wrapper  # type: ignore[return-value]


def announce(batch: ChangeBatch) -> None:
    """Invalidate this process's caches, then tell receivers (the endpoint's notifier)."""
    if not batch.changes:
        return
    bump_generation()
    for receiver, response in registry_changed.send_robust(sender=ChangeBatch, batch=batch):
        if isinstance(response, Exception):
            log.error("registry_changed receiver %r failed: %r", receiver, response)


# ------------------------------------------------------------------------------------ reading it back
def recent_ids(window: int) -> tuple[int, list[int]]:
    """The newest change-log id and the ids present in the ``window`` below it."""
    top = ChangeLogEntry.objects.order_by("-id").values_list("id", flat=True).first() or 0
    present = list(ChangeLogEntry.objects.filter(id__gt=top - window).values_list("id", flat=True))
    return top, present


def _change(row: ChangeLogEntry) -> Change:
    return Change(row.id, row.entry_kind, row.entry_key, row.label, row.list_changed)


def changes_after(after_id: int, limit: int = 5000) -> list[Change]:
    """The changes after ``after_id`` in id order, at most ``limit``."""
    return [_change(r) for r in ChangeLogEntry.objects.filter(id__gt=after_id).order_by("id")[:limit]]


def changes_wanted(after_id: int, gaps: list[int]) -> list[Change]:
    """Rows after ``after_id`` (at most 5,000 per call) and the rows of any ``gaps`` now present
    (ids are not commit order: a long transaction commits its low ids after shorter ones)."""
    found = changes_after(after_id)
    for start in range(0, len(gaps), 500):
        found.extend(_change(r) for r in ChangeLogEntry.objects.filter(id__in=gaps[start:start + 500]))
    return sorted(found, key=lambda c: c.id)


def change_log_bounds() -> tuple[int | None, int | None]:
    """The oldest and the newest id in the change log (None, None when it is empty)."""
    ids = ChangeLogEntry.objects.order_by("id").values_list("id", flat=True)
    return ids.first(), ids.last()


def change_rows_after(after: int, limit: int) -> list[tuple[str, str, str, bool]]:
    """(kind, key, label, list_changed) of the rows after ``after``, at most ``limit`` (a replay)."""
    return list(ChangeLogEntry.objects.filter(id__gt=after).order_by("id")
                .values_list("entry_kind", "entry_key", "label", "list_changed")[:limit])


def prune_change_log() -> int:
    """Delete rows older than CHANGE_LOG_RETENTION_SECONDS (registry.conf); returns how many."""
    cutoff = timezone.now() - timedelta(seconds=float(registry_settings.CHANGE_LOG_RETENTION_SECONDS))
    deleted, _ = ChangeLogEntry.objects.filter(created_at__lt=cutoff).delete()
    return deleted
