"""Test data built once per session and loaded again, row for row, for each test that asks for it.

Publishing the endpoint's fixture registry through the services costs about half a second per
test (250 more prompts: several seconds), and the endpoint tests are transactional (their
requests run on other threads, which see only committed rows), so each of them starts from an
empty database. `SavedData.build` runs the builder once in a session fixture (pytest-django's
`django_db_blocker` pattern), keeps the rows as a `dumpdata` file and the stored bytes as a
folder, and empties the database again; `SavedData.load` puts both back for one test, the rows
inserted as they were (no model receiver records or announces anything), in a fraction of the
time. Every test so starts from the same rows, whatever ran before it.
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.core import serializers
from django.core.management import call_command
from django.core.management.color import no_style
from django.db import connection, models, transaction
from django.test import override_settings

# Rebuilt by Django itself (post_migrate), by the migrations and tests.factories.ensure_role_groups
# (the role groups: a builder acts as a superuser), or never written by a builder.
NOT_SAVED = ["contenttypes", "auth.permission", "auth.group", "sessions", "admin.logentry"]


class SavedData:
    """The rows and stored bytes a builder left, under ``folder``."""

    def __init__(self, folder: Path, user: str) -> None:
        self.rows = folder / "rows.json"  # rows the builder added: each one INSERT
        self.changed = folder / "changed.json"  # rows of the base the builder changed: saved over them
        self.media = folder / "media"
        self.user = user  # the username of the builder's acting user, returned by `load`

    @classmethod
    def build(cls, folder: Path, builder: Callable[[Any], Any], *, base: SavedData | None = None) -> SavedData:
        """Run ``builder`` on an empty database with its own content store (after loading ``base``;
        it is given base's user, or None), save what it left, and empty the database again.
        ``builder`` returns its acting user."""
        media = folder / "media"
        media.mkdir(parents=True)
        storages = {"registry": {"BACKEND": "django.core.files.storage.FileSystemStorage",
                                 "OPTIONS": {"location": media}}}
        from django.conf import settings

        with override_settings(MEDIA_ROOT=media, STORAGES={**settings.STORAGES, **storages}):
            try:
                user = builder(base.load(media) if base is not None else None)
                call_command("dumpdata", exclude=NOT_SAVED, output=str(folder / "all.json"), verbosity=0)
                _split(folder, base)
            finally:
                call_command("flush", interactive=False, verbosity=0)
                _reset_process_caches()
        return cls(folder, user.get_username())

    def load(self, media_root: Path) -> Any:
        """Put the saved rows into the test's database and the saved bytes under ``media_root``;
        the builder's acting user."""
        added: dict[type, list] = defaultdict(list)
        with transaction.atomic():  # foreign keys are checked at commit: rows may come in any order
            for item in serializers.deserialize("json", self.rows.read_text(encoding="utf-8")):
                assert not any(item.m2m_data.values()), "many-to-many rows are not saved; add them here"
                added[type(item.object)].append(item.object)
            for model, objs in added.items():
                # Plain QuerySet.bulk_create: the rows as they were, without the registry querysets'
                # bulk_create hooks (which announce new served rows) or any model signal.
                models.QuerySet(model).bulk_create(objs, batch_size=500)
            for item in serializers.deserialize("json", self.changed.read_text(encoding="utf-8")):
                item.save()  # a raw save, as loaddata's
            with connection.cursor() as cursor:  # PostgreSQL: sequences past the loaded primary keys
                for statement in connection.ops.sequence_reset_sql(no_style(), list(added)):
                    cursor.execute(statement)
        shutil.copytree(self.media, media_root, dirs_exist_ok=True)
        return get_user_model().objects.get_by_natural_key(self.user)


def _split(folder: Path, base: SavedData | None) -> None:
    """all.json -> rows.json (rows that are not in the base's saved rows) and changed.json (rows of
    the base whose fields the builder changed)."""
    rows = json.loads((folder / "all.json").read_text(encoding="utf-8"))
    before: dict = {}
    if base is not None:
        for path in (base.rows, base.changed):
            before.update({(r["model"], r["pk"]): r for r in json.loads(path.read_text(encoding="utf-8"))})
    gone = before.keys() - {(r["model"], r["pk"]) for r in rows}
    assert not gone, f"the builder deleted rows of its base, which loading cannot repeat: {sorted(gone)[:5]}"
    added = [r for r in rows if (r["model"], r["pk"]) not in before]
    changed = [r for r in rows if (r["model"], r["pk"]) in before and before[r["model"], r["pk"]] != r]
    (folder / "rows.json").write_text(json.dumps(added), encoding="utf-8")
    (folder / "changed.json").write_text(json.dumps(changed), encoding="utf-8")


def _reset_process_caches() -> None:
    """What a build left in this process's memory (catalogs, cached content, the endpoint's
    caches) is dropped, so the first test that loads the rows starts as cold as every other."""
    from mcp_endpoint.handlers.catalogs import reset_caches
    from mcp_endpoint.notify.hub import hub
    from mcp_endpoint.wire.sessions import store
    from registry import changes
    from registry.serving import warmup
    from registry.storage import cache as content_cache

    warmup.join()
    changes.bump_generation()
    content_cache.cache.clear()
    reset_caches()
    store.clear_cache()
    hub.__init__()  # type: ignore[misc]
