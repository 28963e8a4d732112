"""Recording changes to served content and announcing them once, after commit.

Every change is written to the change log inside the changing transaction. One callback per
transaction is registered with `transaction.on_commit`; all changes of that transaction join
its batch, so fifty changed entries make one announcement, and a rolled-back transaction's
callback is discarded by Django together with its batch.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

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

    @property
    def ids(self) -> list[int]:
        return [c.id for c in self.changes]

    def __call__(self) -> None:
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
        if isinstance(func, ChangeBatch):
            return func
    batch = ChangeBatch()
    transaction.on_commit(batch)
    return batch


def record_change(*, kind: str, key: str, label: str = "", list_changed: bool = False) -> Change:
    """Write one change-log row and add it to this transaction's announcement."""
    row = ChangeLogEntry.objects.create(entry_kind=kind, entry_key=key, label=label, list_changed=list_changed)
    change = Change(row.pk, kind, key, label, list_changed)
    if transaction.get_connection().in_atomic_block:
        _pending_batch().changes.append(change)
    else:
        announce(ChangeBatch([change]))
    return change


def announce(batch: ChangeBatch) -> None:
    """Invalidate this process's caches, then tell receivers (the endpoint's notifier)."""
    if not batch.changes:
        return
    bump_generation()
    for receiver, response in registry_changed.send_robust(sender=ChangeBatch, batch=batch):
        if isinstance(response, Exception):
            log.error("registry_changed receiver %r failed: %r", receiver, response)
