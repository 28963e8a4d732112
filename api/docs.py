"""The OpenAPI schema and its documentation pages, for signed-in users only.

The schema maps every endpoint, parameter and permission of the API: it is for the people and
tools that use the API, not for anonymous visitors. The schema answers 401 like the API; the two
documentation pages, which people open in a browser, send an anonymous visitor to the login page.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import redirect_to_login
from drf_spectacular.views import SpectacularAPIView, SpectacularRedocView, SpectacularSwaggerSplitView
from rest_framework import exceptions
from rest_framework.permissions import IsAuthenticated
from rest_framework.views import APIView


class SchemaView(SpectacularAPIView):
    permission_classes = [IsAuthenticated]


class _LoginPage(APIView):  # before the drf-spectacular view in the bases: same MRO as a mixin
    permission_classes = [IsAuthenticated]

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, (exceptions.NotAuthenticated, exceptions.AuthenticationFailed)):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)


class SwaggerView(_LoginPage, SpectacularSwaggerSplitView):
    pass


class RedocView(_LoginPage, SpectacularRedocView):
    pass
