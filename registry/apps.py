from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = _("Prompt & resource registry")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.apps import apps

        from registry import credentials, field_labels, receivers

        field_labels.translate_automatic_labels(
            apps.get_app_config(label) for label in field_labels.APPS if apps.is_installed(label))

        receivers.connect()
        credentials.connect()
