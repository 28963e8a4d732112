"""Registry domain errors -> HTTP: the API's one place that decides status codes.

403 no right to do it (publish, approve...), 409 the registry's state forbids it now (approval
missing, stale review, nothing to publish, a damaged stored document), 400 the request itself is
wrong, 503 a dependency is down (the database, the content store: full, read-only, unreachable;
registry/storage/outages.py), so clients retry. Every answer under /api/ is JSON with a `code`, also a
failure raised outside a view (a middleware reading the session during a database outage) and
an unexpected one (500): `failure` answers for the project's handler500 (config/errors.py).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import HttpRequest, JsonResponse
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler
from rest_framework.views import set_rollback

from registry import errors
from registry.refusals import record_refusal
from registry.storage.outages import Outage, outage_of

log = logging.getLogger(__name__)
RETRY_AFTER_SECONDS = 5

CONFLICT_ERRORS = tuple(
    getattr(errors, name) for name in ("ApprovalRequired", "StaleReview", "ReviewClosed", "NothingToPublish",
                                       "NotAnOlderVersion", "ContentMissing")
    if hasattr(errors, name)
)
FORBIDDEN_ERRORS = tuple(
    getattr(errors, name) for name in ("PublishPermissionDenied", "SelfApproval") if hasattr(errors, name)
)


def _code(exc: Exception) -> str:
    name = type(exc).__name__
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def etag(revision: int) -> str:
    """A draft's entity tag: its revision (registry.models.base.VersionedEntry.revision)."""
    return f'"{revision}"'


def registry_error_response(exc: errors.RegistryError) -> Response:
    body: dict[str, Any] = {"detail": exc.message, "code": _code(exc)}
    if isinstance(exc, errors.InvalidEntry):
        body["problems"] = exc.problems
    if isinstance(exc, errors.DraftConflict):
        body["current_revision"] = exc.current_revision
        return Response(body, status=status.HTTP_412_PRECONDITION_FAILED,
                        headers={"ETag": etag(exc.current_revision)})
    if isinstance(exc, errors.RolloutConflict):  # 412: the If-Match state is gone; 409: a blind replacement
        body["current_etag"] = exc.current_state
        return Response(body, status=status.HTTP_412_PRECONDITION_FAILED if exc.precondition
                        else status.HTTP_409_CONFLICT, headers={"ETag": f'"{exc.current_state}"'})
    code: int
    if isinstance(exc, FORBIDDEN_ERRORS):
        code = status.HTTP_403_FORBIDDEN
    elif isinstance(exc, CONFLICT_ERRORS):
        code = status.HTTP_409_CONFLICT
    elif isinstance(exc, (errors.UnknownPrompt, errors.UnknownResource)):
        code = status.HTTP_404_NOT_FOUND
    else:
        code = status.HTTP_400_BAD_REQUEST
    return Response(body, status=code)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    outage = outage_of(exc)
    if outage is not None:
        _log_outage(outage, exc)
        set_rollback()
        return Response(outage_body(outage), status=status.HTTP_503_SERVICE_UNAVAILABLE,
                        headers={"Retry-After": str(RETRY_AFTER_SECONDS)})
    if isinstance(exc, errors.RegistryError):
        record_refusal(exc)  # a refused change is audited; the view's own transaction has rolled back
        return registry_error_response(exc)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)


def outage_body(outage: Outage) -> dict[str, str]:
    return {"detail": outage.message, "code": outage.code}


_last_logged: dict[str, float] = {}


def _log_outage(outage: Outage, exc: BaseException) -> None:
    """One warning a minute per kind of outage, not a traceback per request while it lasts."""
    now = time.monotonic()
    if now - _last_logged.get(outage.code, -1e9) >= 60:
        _last_logged[outage.code] = now
        log.warning("REST API answering 503 (%s): %r", outage.code, exc)


def failure(request: HttpRequest, exc: BaseException | None) -> JsonResponse | None:
    """The project's handler500 under /api/: JSON, 503 with the outage's `code` or a 500, so a
    program never has to parse Django's HTML page; None elsewhere.

    Reached for failures outside DRF's own handling: middleware (the session or user lookup of
    a signed-in browser during a database outage), or an error no handler maps."""
    if not request.path.startswith("/api/"):
        return None
    outage = outage_of(exc)
    if outage is not None:
        _log_outage(outage, exc)  # type: ignore[arg-type]
        response = JsonResponse(outage_body(outage), status=503)
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
        return response
    return JsonResponse({"detail": "Server error: the request failed on the server; it is logged.",
                         "code": "server_error"}, status=500)
