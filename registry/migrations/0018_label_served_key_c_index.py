"""PostgreSQL: index the label rows' served keys in the "C" collation the list pages sort by.

registry/serving/pages.py orders and compares `served_key` COLLATE "C" (code-point order, as
Python sorts); an index only serves a query of its own collation, so on PostgreSQL the
(name, served_key) index of 0017 (the database's default collation) was never used and each
cold page sorted every label row of the label. SQLite compares bytes by default, where 0017's
index already serves. The index is made here by SQL because a model index cannot name a
collation only one backend has.
"""

from typing import Any

from django.db import migrations

TABLES = ("registry_promptlabel", "registry_resourcelabel")


def forwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f'CREATE INDEX IF NOT EXISTS {table}_by_c_key '
                              f'ON {table} (name, served_key COLLATE "C", entry_id)')


def backwards(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    for table in TABLES:
        schema_editor.execute(f"DROP INDEX IF EXISTS {table}_by_c_key")


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0017_label_served_key'),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
