"""OAuth routes. RFC 8414 and RFC 9728 documents live at the origin's /.well-known/; the
authorization server's endpoints under /oauth/ (and /register, where some clients look)."""

from django.urls import include, path, re_path
from oauth2_provider import views as dot

from . import views

app_name = "oauth2_provider"  # django-oauth-toolkit reverses its own endpoints in this namespace

provider = [
    path("authorize/", views.Consent.as_view(), name="authorize"),
    path("token/", views.Token.as_view(), name="token"),
    path("revoke_token/", views.RevokeToken.as_view(), name="revoke-token"),
    path("register/", views.ClientRegistration.as_view(), name="dcr-register"),
    path("register", views.ClientRegistration.as_view()),
    path("register/<str:client_id>/", views.ClientManagement.as_view(),
         name="dcr-register-management"),
    re_path(r"^.*$", views.not_found),
]

urlpatterns = [
    path(".well-known/oauth-authorization-server", dot.OAuthServerMetadataView.as_view(),
         name="oauth-server-metadata"),
    path(".well-known/oauth-protected-resource", views.ProtectedResourceMetadata.as_view(),
         name="oauth-resource-metadata"),
    path(".well-known/oauth-protected-resource/mcp", views.ProtectedResourceMetadata.as_view(),
         name="oauth-resource-metadata-mcp"),
    re_path(r"^\.well-known/.*$", views.not_found),
    path("register", views.ClientRegistration.as_view(), name="register-root"),
    path("oauth/", include(provider)),
]
