"""Drafts keep bytes in the content store now (0011 moved them there): drop the inline columns."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("registry", "0012_move_bytes_to_content_store")]

    operations = [
        migrations.RemoveField(model_name="promptmessage", name="data"),
        migrations.RemoveField(model_name="resource", name="data"),
    ]
