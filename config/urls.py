"""HTTP routes served by Django (admin, REST API under /api/); /mcp is routed to the Channels consumer in
config/asgi.py."""

from django.contrib import admin
from django.urls import include, path
from django.views.generic import RedirectView

from registry.admin.preferences import language_view

urlpatterns = [
    # Each person's own language (registry/admin/preferences.py); before the admin's catch-all.
    path("admin/language/", admin.site.admin_view(language_view), name="registry-language"),
    path("admin/", admin.site.urls),
    path("api/", include("api.urls")),
    # OAuth 2.1: /.well-known/ metadata, /oauth/ authorization server, /register (oauth/urls.py).
    path("", include("oauth.urls")),
    path("", RedirectView.as_view(url="/admin/", permanent=False)),
]

# Programs (the REST API, OAuth clients) get a failure in JSON, 503 while a dependency is down.
handler500 = "config.errors.server_error"
