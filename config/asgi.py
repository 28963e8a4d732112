"""ASGI entry point: Django (admin, API) and the MCP consumer at /mcp in one application."""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from mcp_endpoint.routing import build_application  # noqa: E402  (needs the app registry ready)

application = build_application(django_asgi_app)
