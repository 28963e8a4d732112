"""Recording changes to served content and announcing them once, after commit.

Every change is written to the change log inside the changing transaction. One callback per
transaction is registered with `transaction.on_commit`; all changes of that transaction join
its batch, so fifty changed entries make one announcement, and a rolled-back transaction's
callback is discarded by Django together with its batch.

A change is recorded both by the service that makes it and by the model-save receivers
(registry.receivers), so that changes made outside the services (shell, scripts) are not
missed. `record_change` therefore keeps one row per (kind, key, label) per service call: a
second record of the same change reuses the first row (raising its list_changed flag when
needed), so one service call still writes one row and makes one announcement.

`service_transaction` marks the services' transactions: receivers write an audit row (actor
"database") only for changes made outside it, since the services audit their own changes.
"""

from __future__ import annotations

import functools
import logging
import threading
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Iterator, TypeVar

from django.db import transaction

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


def _pending_batch() -> ChangeBatch:
    connection = transaction.get_connection()
    for _sids, func, _robust in connection.run_on_commit:
        if isinstance(func, ChangeBatch) and not func.sent:
            return func
    batch = ChangeBatch()
    transaction.on_commit(batch)
    return batch


def _already_recorded(recorded: dict[tuple[str, str, str], Change], key: tuple[str, str, str],
                      list_changed: bool) -> Change | None:
    """The change this service call already recorded for `key`, if its row still exists.

    The row is checked because a rolled-back savepoint removes it while the Change is still
    remembered."""
    existing = recorded.get(key)
    if existing is None:
        return None
    rows = ChangeLogEntry.objects.filter(pk=existing.id)
    if existing.list_changed or not list_changed:
        return existing if rows.exists() else None
    if not rows.update(list_changed=True):
        return None
    upgraded = replace(existing, list_changed=True)
    batch = _pending_batch()
    batch.changes = [upgraded if c.id == existing.id else c for c in batch.changes]
    recorded[key] = upgraded
    return upgraded


def record_change(*, kind: str, key: str, label: str = "", list_changed: bool = False) -> Change:
    """Write one change-log row and add it to this transaction's announcement.

    Within one service call, a change of the same (kind, key, label) is recorded once."""
    recorded = _service_changes.get()
    in_transaction = transaction.get_connection().in_atomic_block
    if recorded is not None and in_transaction:
        existing = _already_recorded(recorded, (kind, key, label), list_changed)
        if existing is not None:
            return existing
    row = ChangeLogEntry.objects.create(entry_kind=kind, entry_key=key, label=label, list_changed=list_changed)
    change = Change(row.pk, kind, key, label, list_changed)
    if in_transaction:
        _pending_batch().changes.append(change)
        if recorded is not None:
            recorded[(kind, key, label)] = change
    else:
        announce(ChangeBatch([change]))
    return change


def record_changes(items: list[tuple[str, str, str, bool]]) -> list[Change]:
    """`record_change` for many (kind, key, label, list_changed) at once: one INSERT per batch of rows.

    For a bulk writer inside a service transaction; a change this service call recorded already
    goes through `record_change` (which keeps it to one row)."""
    recorded = _service_changes.get()
    if not transaction.get_connection().in_atomic_block or recorded is None:
        raise RuntimeError("record_changes runs inside a service transaction (changes.service_scope + atomic).")
    fresh = [item for item in items if (item[0], item[1], item[2]) not in recorded]
    again = [item for item in items if (item[0], item[1], item[2]) in recorded]
    rows = ChangeLogEntry.objects.bulk_create(
        [ChangeLogEntry(entry_kind=kind, entry_key=key, label=label, list_changed=listed)
         for kind, key, label, listed in fresh], batch_size=500)
    made = [Change(row.pk, row.entry_kind, row.entry_key, row.label, row.list_changed) for row in rows]
    _pending_batch().changes.extend(made)
    for change in made:
        recorded[(change.kind, change.key, change.label)] = change
    return made + [record_change(kind=k, key=key, label=label, list_changed=listed) for k, key, label, listed in again]


# Set for the duration of the outermost service call: the changes it recorded, by (kind, key, label).
_service_changes: ContextVar[dict[tuple[str, str, str], Change] | None] = ContextVar(
    "registry_service_changes", default=None
)
F = TypeVar("F", bound=Callable[..., Any])


# Instance attribute a service sets on a release label it is saving, having read what the label
# served before: the label receivers then leave the row to the service (which records and
# audits the move itself) instead of re-reading the stored row, the entry and the old version.
SERVICE_SAVE = "_registry_service_save"


@contextmanager
def service_save(instance: Any) -> Iterator[None]:
    """Saves of `instance` inside this block are the running service's own (see SERVICE_SAVE)."""
    setattr(instance, SERVICE_SAVE, True)
    try:
        yield
    finally:
        delattr(instance, SERVICE_SAVE)


def saved_by_service(instance: Any) -> bool:
    """Whether a running service marked this instance's save as its own (registry.receivers)."""
    return in_service() and getattr(instance, SERVICE_SAVE, False)


def in_service() -> bool:
    """Whether the current code runs inside a registry service (which audits its own changes)."""
    return _service_changes.get() is not None


@contextmanager
def service_scope() -> Iterator[None]:
    """Mark the enclosed code as a service that records and audits its own changes (see module doc)."""
    token = _service_changes.set({}) if _service_changes.get() is None else None
    try:
        yield
    finally:
        if token is not None:
            _service_changes.reset(token)


def service_transaction(func: F) -> F:
    """`transaction.atomic` for a service, marking its duration so receivers leave auditing to it
    and its changes are recorded once each."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with service_scope(), transaction.atomic():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


def announce(batch: ChangeBatch) -> None:
    """Invalidate this process's caches, then tell receivers (the endpoint's notifier)."""
    if not batch.changes:
        return
    bump_generation()
    for receiver, response in registry_changed.send_robust(sender=ChangeBatch, batch=batch):
        if isinstance(response, Exception):
            log.error("registry_changed receiver %r failed: %r", receiver, response)
