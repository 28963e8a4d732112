"""The managers of the registry's models: their guarding QuerySets, used by data migrations too.

The QuerySets of the registry's models refuse what would skip the audit or the announcement
(bulk updates of served or governed fields, edits of published versions and audit rows). A data
migration reads the historical models of its migration state, which carry a model's manager only
when it is marked ``use_in_migrations``; without that mark they get Django's plain manager, and a
migration's ``Prompt.objects.update(folder=...)`` or ``PromptVersion.objects.update(...)`` would
pass where the same call in the application is refused. Marked, they get the same QuerySet; only
migrations after the one that records the managers (0027) see it, so the registry's earlier data
migrations are unchanged. Each manager is a class of the module of its QuerySet
(``class EntryManager(GuardedManager.from_queryset(EntryQuerySet))``), as the migration state
names it by its import path.

What a manager cannot guard: a historical model's ``.save()`` sends its signals with the
historical class, which the registry's receivers do not listen to, so a data migration must not
move folders, labels or versions by saving rows; such a change belongs in a service call run by
a management command after ``migrate`` (tests/registry/test_migrations_guarded.py pins both).
"""

from __future__ import annotations

from typing import Any

from django.db import models


class GuardedManager(models.Manager):
    """A manager data migrations use as well."""

    use_in_migrations = True


class InsertOnly(models.QuerySet):
    """A QuerySet whose rows are written once: update() is refused, and `bulk_create` may insert,
    never overwrite a stored row (`update_conflicts` would rewrite it in the database, past every
    per-row guard), both in the subclass's words (`overwrite_refused`). Subclasses refuse delete()."""

    overwrite_refused = "These rows are written once and never changed."

    def update(self, **kwargs: Any) -> int:
        from registry.errors import ImmutableVersionError

        raise ImmutableVersionError(self.overwrite_refused)

    def bulk_create(self, objs: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("update_conflicts"):
            from registry.errors import ImmutableVersionError

            raise ImmutableVersionError(self.overwrite_refused)
        return super().bulk_create(objs, *args, **kwargs)
