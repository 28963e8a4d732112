"""Served label rows are read without touching their entries' rows: the label index ends with
the entry id, so a page's keyset (served key, entry id) comes from the index alone, in order;
and `archived_at` is indexed, so the archived entries a read leaves out are found from it
(LabelQuerySet.of_unarchived_entries) rather than by reading each entry's row, which holds its
draft. PostgreSQL's "C"-collation index of 0018 already ends with the entry id."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('registry', '0029_label_served_projection'),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name='promptlabel',
            name='promptlabel_by_key',
        ),
        migrations.RemoveIndex(
            model_name='resourcelabel',
            name='resourcelabel_by_key',
        ),
        migrations.RemoveIndex(
            model_name='resourcetemplatelabel',
            name='resourcetemplatelabel_by_key',
        ),
        migrations.RemoveIndex(
            model_name='snippetlabel',
            name='snippetlabel_by_key',
        ),
        migrations.AlterField(
            model_name='prompt',
            name='archived_at',
            field=models.DateTimeField(blank=True, db_index=True, editable=False, null=True, verbose_name='archived at'),
        ),
        migrations.AlterField(
            model_name='resource',
            name='archived_at',
            field=models.DateTimeField(blank=True, db_index=True, editable=False, null=True, verbose_name='archived at'),
        ),
        migrations.AlterField(
            model_name='resourcetemplate',
            name='archived_at',
            field=models.DateTimeField(blank=True, db_index=True, editable=False, null=True, verbose_name='archived at'),
        ),
        migrations.AlterField(
            model_name='snippet',
            name='archived_at',
            field=models.DateTimeField(blank=True, db_index=True, editable=False, null=True, verbose_name='archived at'),
        ),
        migrations.AddIndex(
            model_name='promptlabel',
            index=models.Index(fields=['name', 'served_key', 'entry'], name='promptlabel_by_key'),
        ),
        migrations.AddIndex(
            model_name='resourcelabel',
            index=models.Index(fields=['name', 'served_key', 'entry'], name='resourcelabel_by_key'),
        ),
        migrations.AddIndex(
            model_name='resourcetemplatelabel',
            index=models.Index(fields=['name', 'served_key', 'entry'], name='resourcetemplatelabel_by_key'),
        ),
        migrations.AddIndex(
            model_name='snippetlabel',
            index=models.Index(fields=['name', 'served_key', 'entry'], name='snippetlabel_by_key'),
        ),
    ]
