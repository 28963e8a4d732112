"""ASGI entry point: Django (admin, API) and the MCP consumer at /mcp in one application.

Static files (admin CSS, the API docs' Swagger UI) are served by Django's staticfiles handler
whatever the server (daphne, uvicorn) and DEBUG, so `make run` and a bare
`python -m daphne config.asgi:application` show a styled admin without a separate web server.
"""

import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
django_asgi_app = get_asgi_application()

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler  # noqa: E402

from django.conf import settings  # noqa: E402

from config.eager_writes import install_eager_writes  # noqa: E402
from config.gc_tuning import tune_for_serving  # noqa: E402
from config.http_limits import RequestHeadLimit, install_twisted_limits  # noqa: E402
from mcp_endpoint.routing import build_application  # noqa: E402  (needs the app registry ready)

# Oversized request heads get 431 with a body under daphne (Twisted) and any other server.
install_twisted_limits(settings.MAX_REQUEST_HEAD_BYTES)
install_eager_writes()  # a notification to 1,000 streams: one send each, no reactor round trip
application = RequestHeadLimit(build_application(ASGIStaticFilesHandler(django_asgi_app)),
                               settings.MAX_REQUEST_HEAD_BYTES)
tune_for_serving()  # last: what is built by now is never collected (config/gc_tuning.py)
