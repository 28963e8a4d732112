from django.apps import AppConfig


class McpEndpointConfig(AppConfig):
    name = "mcp_endpoint"
    verbose_name = "MCP endpoint"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from registry.signals import registry_changed

        from .hub import forward_registry_changes
        from .open_files import fit_stream_limits

        registry_changed.connect(forward_registry_changes, dispatch_uid="mcp_endpoint.forward_registry_changes")
        fit_stream_limits()  # once per process: every stream holds a file descriptor
