from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = _("Prompt & resource registry")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from registry import signals
        from registry.release import receivers, stale
        from registry.serving import credentials

        receivers.connect()
        credentials.connect()
        from django.db.models.signals import pre_save

        from registry.models import PromptLabel, ResourceLabel, ResourceTemplateLabel, SnippetLabel
        from registry.models.base import project_loaded_label

        for label_model in (PromptLabel, ResourceLabel, ResourceTemplateLabel, SnippetLabel):
            # A fixture restore's label rows take their version's projection as loaded.
            pre_save.connect(project_loaded_label, sender=label_model, dispatch_uid=f"registry.project:{label_model}")
        # A draft change makes open requests for the draft stale: told once, in the changing transaction.
        signals.audit_recorded.connect(stale.audit_recorded, dispatch_uid="registry.stale_requests")
        signals.audits_recorded.connect(stale.audits_recorded, dispatch_uid="registry.stale_requests_bulk")
        # E-mail to the people an event concerns: outbox rows in the same transaction, sent after commit.
        from django.core import checks

        from registry.mail import checks as mail_checks
        from registry.mail import queue, sending

        signals.audit_recorded.connect(queue.audit_recorded, dispatch_uid="registry.mail")
        checks.register(mail_checks.check_public_url)
        sending.sender.start_if_serving()  # a server picks up mail left pending (retries) by an earlier run
