from django.apps import AppConfig
from django.utils.translation import gettext_lazy


class McpEndpointConfig(AppConfig):
    name = "mcp_endpoint"
    verbose_name = gettext_lazy("MCP endpoint")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks
        from django.core.signals import request_finished, request_started

        from .notify import handoff, revocation
        from .notify.reads import credentials_changed, registry_changed
        from .transport import daphne_guard
        from .transport.open_files import fit_stream_limits

        registry_changed.connect(handoff.forward_registry_changes,
                                 dispatch_uid="mcp_endpoint.forward_registry_changes")
        # A revoked client's (or token's, or user's) open streams end at once, in every process.
        credentials_changed.connect(revocation.record_credentials_change,
                                    dispatch_uid="mcp_endpoint.record_credentials_change")
        # A request's own changes reach the hub once its response is out (notify/handoff.py).
        request_started.connect(handoff.request_started,
                                dispatch_uid="mcp_endpoint.handoff.request_started")
        request_finished.connect(handoff.request_finished,
                                 dispatch_uid="mcp_endpoint.handoff.request_finished")
        # `manage.py check` warns when a daphne/Twisted name the server patches rely on is gone.
        checks.register(daphne_guard.check_patches, checks.Tags.compatibility)
        fit_stream_limits()  # once per process: every stream holds a file descriptor
