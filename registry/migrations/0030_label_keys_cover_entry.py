"""Served label rows are read without touching their entries' rows: the label index ends with
the entry id, so a page's keyset (served key, entry id) comes from the index alone (for production, in order);
and `archived_at` is indexed, so the archived entries a read leaves out are found from it
(LabelQuerySet.of_unarchived_entries) rather than by reading each entry's row, which holds its
draft. PostgreSQL's "C"-collation index of 0018 already ends with the entry id.

The `archived_at` index is created by SQL, the field altered in the state alone: SQLite alters a
field by copying its whole table, which for the entry tables would copy every draft.
"""

from django.db import migrations, models

LABELS = ("promptlabel", "resourcelabel", "resourcetemplatelabel", "snippetlabel")


def _index_archived_at(model_name: str, index_name: str) -> migrations.SeparateDatabaseAndState:
    """`archived_at` gains db_index (its index named as Django names it, so a later AlterField
    finds it), without rewriting the table."""
    table = f"registry_{model_name}"
    return migrations.SeparateDatabaseAndState(
        state_operations=[migrations.AlterField(
            model_name=model_name, name="archived_at",
            field=models.DateTimeField(blank=True, db_index=True, editable=False, null=True,
                                       verbose_name="archived at"))],
        database_operations=[migrations.RunSQL(f"CREATE INDEX {index_name} ON {table} (archived_at)",
                                               f"DROP INDEX {index_name}")])


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0029_label_served_projection'),
    ]

    operations = [
        *(migrations.RemoveIndex(model_name=label, name=f"{label}_by_key") for label in LABELS),
        _index_archived_at("prompt", "registry_prompt_archived_at_bbc35902"),
        _index_archived_at("resource", "registry_resource_archived_at_de5ff726"),
        _index_archived_at("resourcetemplate", "registry_resourcetemplate_archived_at_add16ac2"),
        _index_archived_at("snippet", "registry_snippet_archived_at_13435735"),
        *(migrations.AddIndex(model_name=label, index=models.Index(fields=["name", "served_key", "entry"],
                                                                   name=f"{label}_by_key"))
          for label in LABELS),
    ]
