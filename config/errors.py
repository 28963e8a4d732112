"""The project's handler500: a failure answered in the shape its caller reads.

Programs get JSON: the REST API under /api/ (`detail` and `code`; api/errors.py) and the OAuth
endpoints they call (RFC 6749 error objects; oauth/views.py), 503 while a dependency is down
(registry/storage/outages.py) so they retry rather than give up. People get Django's own page.
"""

from __future__ import annotations

import sys

from django.http import HttpRequest, HttpResponse
from django.views import defaults


def server_error(request: HttpRequest) -> HttpResponse:
    from api.errors import failure as api_failure
    from oauth.views import failure as oauth_failure

    exc = sys.exc_info()[1]  # the handler runs while Django handles the exception
    for answer in (api_failure, oauth_failure):
        response = answer(request, exc)
        if response is not None:
            return response
    return defaults.server_error(request)
