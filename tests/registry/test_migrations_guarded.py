"""Data migrations meet the registry's guards (registry/models/managers.py): their historical
models carry the same QuerySets, so a bulk move of folders, a bulk edit of served fields, an edit
of a published version or of an audit row is refused in a migration as in the application; and
no later data migration saves registry rows behind the receivers' back."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.apps import apps
from django.db import connection, models
from django.db.migrations.loader import MigrationLoader

from registry.errors import BulkUpdateRefused, ImmutableVersionError
from tests.factories import make_prompt, release

pytestmark = pytest.mark.django_db

MIGRATIONS = Path(__file__).resolve().parents[2] / "registry" / "migrations"
# The first migration whose historical models carry the guarding managers; data migrations before
# it ran on the plain manager and are history (each rewrites only how something is recorded).
GUARDED_FROM = 27
# A later data migration that must write registry rows: its file name and why it may.
ALLOWED_DATA_MIGRATIONS: dict[str, str] = {
    "0029_label_served_projection.py": "fills a derived column (each label row's copy of its version's "
                                       "listing, registry.models.base.served_projection) that changes nothing "
                                       "a client is served: rows without it are read from their version",
    "0030_label_keys_cover_entry.py": "RunSQL creates an index (on archived_at, by SQL so SQLite does not copy "
                                      "the entry tables); it writes no row",
}


def historical():
    return MigrationLoader(connection).project_state().apps


def test_a_data_migrations_bulk_folder_move_and_served_field_update_are_refused():
    make_prompt("greet", folder="support")
    prompt_model = historical().get_model("registry", "Prompt")
    with pytest.raises(BulkUpdateRefused):
        prompt_model.objects.update(folder="elsewhere")
    label_model = historical().get_model("registry", "PromptLabel")
    with pytest.raises(BulkUpdateRefused):
        label_model.objects.update(version=None)


def test_a_data_migration_may_not_edit_a_published_version_or_an_audit_row():
    release(make_prompt("greet"))
    state = historical()
    with pytest.raises(ImmutableVersionError):
        state.get_model("registry", "PromptVersion").objects.update(note="rewritten")
    with pytest.raises(ImmutableVersionError):
        state.get_model("registry", "AuditEntry").objects.update(note="rewritten")


def test_every_guarding_manager_is_used_in_migrations():
    unguarded = [model.__name__ for model in apps.get_app_config("registry").get_models()
                 if model._default_manager._queryset_class is not models.QuerySet
                 and not model._default_manager.use_in_migrations]
    assert unguarded == []


def test_no_later_data_migration_writes_registry_rows_unless_allowed_with_a_reason():
    written = []
    for path in sorted(MIGRATIONS.glob("[0-9][0-9][0-9][0-9]_*.py")):
        if int(path.name[:4]) < GUARDED_FROM or path.name in ALLOWED_DATA_MIGRATIONS:
            continue
        tree = ast.parse(path.read_text())
        if any(isinstance(node, ast.Attribute) and node.attr in ("RunPython", "RunSQL") for node in ast.walk(tree)):
            written.append(path.name)
    assert written == [], (
        "A data migration's saves reach none of the registry's receivers (no audit row, no announcement): "
        "move folders, labels or versions with the registry services in a command run after migrate, or "
        "list the migration in ALLOWED_DATA_MIGRATIONS with why it may")


def test_the_models_and_the_migrations_agree():
    """No change waits for a migration (a manager that compared unequal to its migration state
    would make `makemigrations` write one on every run)."""
    from django.core.management import call_command

    call_command("makemigrations", "--check", "--dry-run", verbosity=0)


def test_bulk_create_may_insert_but_never_overwrite_a_written_once_row():
    from registry.models import AuditEntry, PromptVersion

    release(make_prompt("greet"))
    for model, field in ((AuditEntry, "note"), (PromptVersion, "change_note")):
        row = model.objects.first()
        with pytest.raises(ImmutableVersionError):
            model.objects.bulk_create([row], update_conflicts=True, unique_fields=["id"], update_fields=[field])
