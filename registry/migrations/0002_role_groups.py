"""Create the three roles the admin is organised around: Editors, Publishers, Auditors."""

from django.db import migrations

EDIT_MODELS = ["prompt", "promptargument", "promptmessage", "resource", "resourcetemplate", "templatevariable"]
READ_MODELS = [
    "promptversion", "promptlabel", "resourceversion", "resourcelabel", "resourcetemplateversion",
    "resourcetemplatelabel", "fetchcounter", "mcpclient", "auditentry",
]
ROLES = {
    "Editors": [f"{action}_{model}" for model in EDIT_MODELS for action in ("add", "change", "delete", "view")]
    + [f"view_{model}" for model in READ_MODELS if model not in ("mcpclient", "auditentry")],
    "Publishers": [f"{action}_{model}" for model in EDIT_MODELS for action in ("add", "change", "delete", "view")]
    + [f"view_{model}" for model in READ_MODELS]
    + ["publish_prompt", "publish_resource", "publish_resourcetemplate", "add_mcpclient", "change_mcpclient"],
    "Auditors": [f"view_{model}" for model in EDIT_MODELS + READ_MODELS] + ["export_auditentry"],
}


def create_groups(apps, schema_editor):
    from django.contrib.auth.management import create_permissions

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    Group = apps.get_model("auth", "Group")
    Permission = apps.get_model("auth", "Permission")
    for role, codenames in ROLES.items():
        group, _ = Group.objects.get_or_create(name=role)
        perms = Permission.objects.filter(content_type__app_label="registry", codename__in=codenames)
        missing = set(codenames) - set(perms.values_list("codename", flat=True))
        if missing:
            raise RuntimeError(f"permissions missing for {role}: {sorted(missing)}")
        group.permissions.set(perms)


def remove_groups(apps, schema_editor):
    apps.get_model("auth", "Group").objects.filter(name__in=ROLES).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0001_initial"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(create_groups, remove_groups)]
