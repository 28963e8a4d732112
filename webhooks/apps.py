from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"
    verbose_name = "Webhooks"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from registry import signals
        from webhooks import delivery, receivers

        # The outbox: one delivery row per subscribed webhook, written in the auditing transaction.
        signals.audit_recorded.connect(receivers.audit_recorded, dispatch_uid="webhooks.audit_recorded")
        # Under a server, pick up deliveries left pending (retries) by an earlier run.
        delivery.start_if_serving()
