"""``python manage.py serve [--workers N]``: the production server, uvicorn workers.

daphne (``make run``) is the development server; its Twisted HTTP layer caps this application at
a fraction of what uvicorn serves on the same core (README, Benchmarks). This command serves the
same ``config.asgi:application`` on uvicorn with everything the project needs set in one place
(:func:`uvicorn_options`), so a deployment does not have to rediscover the flags:

* uvloop and httptools (the fast pair); with ``--http h11``, h11's buffer for an unfinished head
  is raised above ``MAX_REQUEST_HEAD_BYTES`` so that an oversized head gets the project's 431 with
  a JSON-RPC body (config/http_limits.py) instead of h11's bare 400 and a reset;
* proxy headers only when asked (``--proxy-headers``), trusted from ``--forwarded-allow-ips``
  only, so a direct client cannot choose the address login throttling sees;
* a bounded graceful shutdown: notification streams never end by themselves, and uvicorn would
  otherwise wait for them forever on SIGTERM;
* no access log (a log line per request; the proxy in front logs requests).

What uvicorn does not do that daphne's patches do (a request-head timeout) is the proxy's job:
the README's table "daphne's patches on uvicorn" says which layer does what.
"""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

APPLICATION = "config.asgi:application"
# h11 refuses a head once it holds more than this many unparsed bytes; kept above the project's
# own head limit so that the project's 431 answers first.
H11_MIN_INCOMPLETE_EVENT_BYTES = 1024 * 1024
GRACEFUL_SHUTDOWN_SECONDS = 10


def uvicorn_options(*, host: str, port: int, workers: int, http: str = "httptools", proxy_headers: bool = False,
                    forwarded_allow_ips: str = "127.0.0.1", backlog: int = 4096,
                    timeout_keep_alive: int = 5) -> dict[str, Any]:
    """The keyword arguments of ``uvicorn.run`` for this project (one place, tested)."""
    head_limit = int(getattr(settings, "MAX_REQUEST_HEAD_BYTES", 16 * 1024))
    return {
        "app": APPLICATION, "host": host, "port": port, "workers": workers,
        "loop": "uvloop", "http": http,
        "h11_max_incomplete_event_size": max(H11_MIN_INCOMPLETE_EVENT_BYTES, 2 * head_limit),
        "proxy_headers": proxy_headers, "forwarded_allow_ips": forwarded_allow_ips if proxy_headers else None,
        "backlog": backlog, "timeout_keep_alive": timeout_keep_alive,
        "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_SECONDS,
        "access_log": False, "log_level": "warning", "lifespan": "auto",
    }


class Command(BaseCommand):
    help = "Serve the registry (admin, API, /mcp) on uvicorn workers: the production server."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1", help="Address to bind (default 127.0.0.1).")
        parser.add_argument("--port", type=int, default=8000, help="Port to bind (default 8000).")
        parser.add_argument("--workers", type=int, default=1,
                            help="Worker processes (one per core; more than one needs REDIS_URL for "
                                 "notifications in milliseconds rather than the database poll).")
        parser.add_argument("--http", choices=("httptools", "h11"), default="httptools",
                            help="HTTP parser (default httptools, the faster).")
        parser.add_argument("--proxy-headers", action="store_true",
                            help="Trust X-Forwarded-For/-Proto from --forwarded-allow-ips (behind a proxy).")
        parser.add_argument("--forwarded-allow-ips", default=os.environ.get("FORWARDED_ALLOW_IPS", "127.0.0.1"),
                            help="Comma-separated proxy addresses whose forwarded headers are trusted.")
        parser.add_argument("--backlog", type=int, default=4096, help="Listen backlog (default 4096).")

    def handle(self, *args, host: str, port: int, workers: int, http: str, proxy_headers: bool,
               forwarded_allow_ips: str, backlog: int, **options):
        import uvicorn

        if workers < 1:
            raise CommandError("--workers must be at least 1")
        if workers > 1 and not os.environ.get("REDIS_URL"):
            self.stderr.write("serve: several workers without REDIS_URL: notifications cross workers only "
                              "through the database poll (set REDIS_URL in production)")
        uvicorn.run(**uvicorn_options(host=host, port=port, workers=workers, http=http, proxy_headers=proxy_headers,
                                      forwarded_allow_ips=forwarded_allow_ips, backlog=backlog))
