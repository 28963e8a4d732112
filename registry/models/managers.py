"""The one way a registry model builds its manager: its guarding QuerySet, in data migrations too.

The QuerySets of the registry's models refuse what would skip the audit or the announcement
(bulk updates of served or governed fields, edits of published versions and audit rows). A data
migration reads the historical models of its migration state, which carry a model's manager only
when it is marked ``use_in_migrations``; without that mark they get Django's plain manager, and a
migration's ``Prompt.objects.update(folder=...)`` or ``PromptVersion.objects.update(...)`` would
pass where the same call in the application is refused. Marked, they get the same QuerySet
(serialised as ``QuerySet.as_manager()`` in the migration state, so only migrations after the
one that records the managers see it: the registry's earlier data migrations are unchanged).

What a manager cannot guard: a historical model's ``.save()`` sends its signals with the
historical class, which the registry's receivers do not listen to, so a data migration must not
move folders, labels or versions by saving rows; such a change belongs in a service call run by
a management command after ``migrate`` (tests/registry/test_migrations_guarded.py pins both).
"""

from __future__ import annotations

from typing import Any

from django.db import models


def guarded_manager(queryset_class: type[models.QuerySet]) -> Any:
    """``queryset_class.as_manager()``, used by data migrations as well."""
    manager = queryset_class.as_manager()
    manager.use_in_migrations = True
    return manager
