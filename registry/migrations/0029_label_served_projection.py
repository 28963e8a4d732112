"""Label rows carry a projection of their version (registry.models.base.served_projection), so a
cold list page reads label rows alone. Existing rows get it from their version; rows of an
older projection or none are read from the version anyway (registry/serving/catalogs.py)."""

from itertools import islice
from types import SimpleNamespace
from typing import Any

from django.db import migrations, models

LABELS = ("PromptLabel", "ResourceLabel", "ResourceTemplateLabel", "SnippetLabel")


def forwards(apps: Any, schema_editor: Any) -> None:
    from registry.models.base import served_projection

    connection = schema_editor.connection
    quote = connection.ops.quote_name
    for model_name in LABELS:
        labels = apps.get_model("registry", model_name)
        sql = f"UPDATE {quote(labels._meta.db_table)} SET {quote('served')} = %s WHERE {quote('id')} = %s"
        rows = labels.objects.values_list("pk", "version_id", "version__number", "version__created_at",
                                          "version__listing")
        found = rows.iterator(chunk_size=2000)
        while batch := [(served_projection(SimpleNamespace(pk=version_id, number=number, created_at=created_at,
                                                           listing=listing)), pk)
                        for pk, version_id, number, created_at, listing in islice(found, 2000)]:
            with connection.cursor() as cursor:  # the label manager refuses update() of `served`
                cursor.executemany(sql, batch)


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0028_scheduled_release_retries'),
    ]

    operations = [
        migrations.AddField(
            model_name='promptlabel',
            name='served',
            field=models.TextField(blank=True, default='', editable=False, help_text='What the version lists, kept on the label row (served_projection), so cold list pages read label rows alone, not the version rows with their snapshots.', verbose_name='served projection'),
        ),
        migrations.AddField(
            model_name='resourcelabel',
            name='served',
            field=models.TextField(blank=True, default='', editable=False, help_text='What the version lists, kept on the label row (served_projection), so cold list pages read label rows alone, not the version rows with their snapshots.', verbose_name='served projection'),
        ),
        migrations.AddField(
            model_name='resourcetemplatelabel',
            name='served',
            field=models.TextField(blank=True, default='', editable=False, help_text='What the version lists, kept on the label row (served_projection), so cold list pages read label rows alone, not the version rows with their snapshots.', verbose_name='served projection'),
        ),
        migrations.AddField(
            model_name='snippetlabel',
            name='served',
            field=models.TextField(blank=True, default='', editable=False, help_text='What the version lists, kept on the label row (served_projection), so cold list pages read label rows alone, not the version rows with their snapshots.', verbose_name='served projection'),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
