from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = _("Prompt & resource registry")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from registry.release import receivers
        from registry.serving import credentials

        receivers.connect()
        credentials.connect()
