"""Static files for every server, with a path that leaves the static folders answered 404.

Django's ASGIStaticFilesHandler turns only Http404 into a response: ``/static/../x`` makes the
finders raise SuspiciousFileOperation, which reached the server as a 500 with a traceback in the
log. A path that escapes the static folders names no static file, so it is a 404 like any other.
"""

from __future__ import annotations

from typing import Any

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.exceptions import SuspiciousOperation
from django.http import Http404


class StaticFiles(ASGIStaticFilesHandler):
    def serve(self, request: Any) -> Any:
        try:
            return super().serve(request)
        except SuspiciousOperation:
            raise Http404("No such static file.") from None
