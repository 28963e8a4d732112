from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks
        from django.db.models.signals import post_migrate

        from registry import signals
        from webhooks import delivery, receivers, roles
        from webhooks.checks import check_allowed_networks

        checks.register(check_allowed_networks)

        # The outbox: one delivery row per subscribed webhook, written in the auditing transaction.
        signals.audit_recorded.connect(receivers.audit_recorded, dispatch_uid="webhooks.audit_recorded")
        signals.audits_recorded.connect(receivers.audits_recorded, dispatch_uid="webhooks.audits_recorded")
        # Publishers manage webhooks in the admin (registry.roles only knows registry's models).
        post_migrate.connect(roles.grant_publishers, sender=self, dispatch_uid="webhooks.grant_publishers")
        # Under a server, pick up deliveries left pending (retries) by an earlier run.
        delivery.start_if_serving()
