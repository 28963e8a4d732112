"""Registry domain errors -> HTTP: the API's one place that decides status codes.

403 no right to do it (publish, approve...), 409 the registry's state forbids it now (approval
missing, stale review, nothing to publish), 400 the request itself is wrong.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import exceptions, status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from registry import errors

CONFLICT_ERRORS = tuple(
    getattr(errors, name) for name in ("ApprovalRequired", "StaleReview", "ReviewClosed", "NothingToPublish",
                                       "NotAnOlderVersion")
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
    if isinstance(exc, errors.RegistryError):
        return registry_error_response(exc)
    if isinstance(exc, DjangoValidationError):
        detail = exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        exc = exceptions.ValidationError(detail)
    return drf_exception_handler(exc, context)
