"""The REST API speaks the project's language (settings.LANGUAGE_CODE), never the caller's.

LocaleMiddleware and registry.admin.language.UserLanguageMiddleware pick a language for every request
so the admin speaks each editor's; the API is a contract for programs (CI, prompts-as-code, the
OpenAPI schema), whose error texts, field routing and descriptions must not change with the
caller's Accept-Language or saved admin language. This middleware, after those two, switches the
views of the `api` namespace back to LANGUAGE_CODE and says so in Content-Language.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation

NAMESPACE = "api"


class ApiLanguageMiddleware:
    """Every view under the `api` URL namespace runs, and answers, in settings.LANGUAGE_CODE."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        before = translation.get_language()
        response = self.get_response(request)
        if getattr(request, "registry_api_language", False):
            response.headers["Content-Language"] = settings.LANGUAGE_CODE
            if before:
                translation.activate(before)  # the thread goes back to what the middleware above chose
        return response

    def process_view(self, request: HttpRequest, view_func: Callable[..., Any], view_args: Any,
                     view_kwargs: Any) -> None:
        match = request.resolver_match
        if match is not None and NAMESPACE in match.namespaces:
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = settings.LANGUAGE_CODE
            request.registry_api_language = True  # type: ignore[attr-defined]
