"""Create the role groups Editors, Publishers and Auditors (see registry/roles.py)."""

from django.db import migrations


def create_groups(apps, schema_editor):
    from registry.roles import ensure_role_groups

    ensure_role_groups(apps)


def remove_groups(apps, schema_editor):
    from registry.roles import ROLES

    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
