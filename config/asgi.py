"""ASGI entry point: Django (admin, API) and the MCP consumer at /mcp in one application.

Static files (admin CSS, the API docs' Swagger UI) are served by Django's staticfiles handler
whatever the server (daphne, uvicorn) and DEBUG, so `make run` and a bare
`python -m daphne config.asgi:application` show a styled admin without a separate web server.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from django.conf import settings  # noqa: E402

from config.gc_tuning import tune_for_serving  # noqa: E402
from config.http_limits import RequestLimits, body_limit, refusal_response  # noqa: E402
from config.static_files import StaticFiles  # noqa: E402
from mcp_endpoint.routing import build_application  # noqa: E402  (needs the app registry ready)
from mcp_endpoint.transport import daphne_server  # noqa: E402

# Under daphne, Twisted's HTTP channel refuses oversized heads and bodies and times out heads
# that do not arrive, and writes go to the socket at once (each with a fallback when Twisted or
# daphne changed: mcp_endpoint/transport/daphne_server.py). Any other server gets the ASGI layer
# below.
daphne_server.install(daphne_server.Limits(
    head_bytes=settings.MAX_REQUEST_HEAD_BYTES, body_bytes=body_limit,
    head_seconds=settings.REQUEST_HEAD_TIMEOUT_SECONDS, answer=refusal_response))
application = RequestLimits(
    # When serving starts, what is built by then is never collected (config/gc_tuning.py).
    build_application(StaticFiles(django_asgi_app), on_start=[tune_for_serving]),
    head_limit=settings.MAX_REQUEST_HEAD_BYTES, body_limit=body_limit)
