"""HTTP routes served by Django (admin, REST API under /api/); /mcp is routed to the Channels consumer in
config/asgi.py."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    # OAuth 2.1: /.well-known/ metadata, /oauth/ authorization server, /register (oauth/urls.py).
    path("", include("oauth.urls")),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]
