"""Which versions a label served to every client before: read from the audit trail.

A label served a version to every client when it was moved to it: a `label_move` or `rollback`
audit row names the label and the version (`to_version`), whichever path moved it (services,
rollout completion, approvals, or a plain ORM save recorded by registry.release.receivers). A rollout's
candidate went to part of the clients only, so it is not counted here.

Two rules read it: an incident rollback may go only to a version its protected label served
before (registry/release/services.py), and an MCP client's change log lists only versions the label it
is served from served (registry/serving/dynamic.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import cast

from registry.models import AuditAction, AuditEntry

MOVES = (AuditAction.LABEL_MOVE, AuditAction.ROLLBACK)


def versions_served(kind: str, entry_id: int, label: str) -> set[int]:
    """The version numbers `label` of entry (kind, entry_id) was ever moved to."""
    numbers = AuditEntry.objects.filter(entry_kind=kind, entry_id=entry_id, label=label, action__in=MOVES,
                                        to_version__isnull=False).values_list("to_version", flat=True)
    return set(cast("Iterable[int]", numbers))  # no None: to_version__isnull=False


def served_before(kind: str, entry_id: int, label: str, version_number: int) -> bool:
    """Whether `label` once served `version_number` to every client (a full move, not a rollout)."""
    return AuditEntry.objects.filter(entry_kind=kind, entry_id=entry_id, label=label, to_version=version_number,
                                     action__in=MOVES).exists()
