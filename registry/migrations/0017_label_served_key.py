"""Label rows carry the key their version is served under, indexed with the label name, so a
list page can be read from the database in key order without building the catalog
(registry/serving/pages.py). Existing rows get it from their version's listing."""

from typing import Any

from django.db import migrations, models

LABELS = ("PromptLabel", "ResourceLabel", "ResourceTemplateLabel")


def forwards(apps: Any, schema_editor: Any) -> None:
    from registry.models.base import served_key_of

    for model_name in LABELS:
        labels = apps.get_model("registry", model_name)
        rows = labels.objects.values_list("pk", "version__listing", "version__snapshot")
        for pk, listing, snapshot in rows.iterator(chunk_size=2000):
            labels.objects.filter(pk=pk).update(served_key=served_key_of(listing, snapshot))  # historical: no guard


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0016_normalise_listed_uris'),
    ]

    operations = [
        migrations.AddField(
            model_name='promptlabel',
            name='served_key',
            field=models.CharField(blank=True, default='', editable=False, help_text="The served version's name or URI (served_key_of), kept on the label row so list pages can be read from the database in key order by an index (registry/serving/pages.py).", max_length=2048),
        ),
        migrations.AddField(
            model_name='resourcelabel',
            name='served_key',
            field=models.CharField(blank=True, default='', editable=False, help_text="The served version's name or URI (served_key_of), kept on the label row so list pages can be read from the database in key order by an index (registry/serving/pages.py).", max_length=2048),
        ),
        migrations.AddField(
            model_name='resourcetemplatelabel',
            name='served_key',
            field=models.CharField(blank=True, default='', editable=False, help_text="The served version's name or URI (served_key_of), kept on the label row so list pages can be read from the database in key order by an index (registry/serving/pages.py).", max_length=2048),
        ),
        migrations.RunPython(forwards, migrations.RunPython.noop),
        migrations.AddIndex(
            model_name='promptlabel',
            index=models.Index(fields=['name', 'served_key'], name='promptlabel_by_key'),
        ),
        migrations.AddIndex(
            model_name='resourcelabel',
            index=models.Index(fields=['name', 'served_key'], name='resourcelabel_by_key'),
        ),
        migrations.AddIndex(
            model_name='resourcetemplatelabel',
            index=models.Index(fields=['name', 'served_key'], name='resourcetemplatelabel_by_key'),
        ),
    ]
