from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = gettext_lazy("Webhooks")  # the admin's navigation shows it
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks
        from django.db.models.signals import post_delete, post_migrate, post_save

        from registry import signals
        from webhooks import delivery, receivers, roles
        from webhooks.checks import check_allowed_networks
        from webhooks.models import Webhook

        checks.register(check_allowed_networks)

        # The outbox: one delivery row per subscribed webhook, written in the auditing transaction.
        signals.audit_recorded.connect(receivers.audit_recorded, dispatch_uid="webhooks.audit_recorded")
        signals.audits_recorded.connect(receivers.audits_recorded, dispatch_uid="webhooks.audits_recorded")
        # ... which reads the active webhooks once per transaction; a webhook edited in it re-reads.
        post_save.connect(receivers.webhook_changed, sender=Webhook, dispatch_uid="webhooks.webhook_saved")
        post_delete.connect(receivers.webhook_changed, sender=Webhook, dispatch_uid="webhooks.webhook_deleted")
        # Publishers manage webhooks in the admin (registry.roles only knows registry's models).
        post_migrate.connect(roles.grant_publishers, sender=self, dispatch_uid="webhooks.grant_publishers")
        # `manage.py registry_worker` delivers due webhooks on each pass of its loop.
        signals.worker_pass.connect(delivery.worker_pass, dispatch_uid="webhooks.worker_pass")
        # Under a server, pick up deliveries left pending (retries) by an earlier run.
        delivery.start_if_serving()
