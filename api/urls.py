"""/api/v1/... (the API), /api/schema/ (OpenAPI), /api/docs/ (Swagger UI), /api/redoc/ (Redoc); all need a login."""

from csp.decorators import csp_update
from django.urls import include, path
from rest_framework.routers import DefaultRouter

from api.audit import AuditViewSet
from api.docs import RedocView, SchemaView, SwaggerView
from api.entries import PromptViewSet, ResourceViewSet, SnippetViewSet, TemplateViewSet
from api.fetches import FetchViewSet
from api.portable import ExportView, ImportView
from api.reviews import ReviewViewSet, ScheduledReleaseViewSet

router = DefaultRouter()
router.include_format_suffixes = False  # prompt names may contain '.', so '/prompts/a.json/' is a name
router.register("prompts", PromptViewSet, basename="prompt")
router.register("resources", ResourceViewSet, basename="resource")
router.register("templates", TemplateViewSet, basename="template")
router.register("snippets", SnippetViewSet, basename="snippet")
router.register("reviews", ReviewViewSet, basename="review")
router.register("scheduled-releases", ScheduledReleaseViewSet, basename="scheduled-release")
router.register("audit", AuditViewSet, basename="audit")
router.register("fetches", FetchViewSet, basename="fetch")

app_name = "api"
urlpatterns = [
    path("v1/", include(router.urls)),
    path("v1/export/", ExportView.as_view(), name="export"),
    path("v1/import/", ImportView.as_view(), name="import"),
    path("schema/", SchemaView.as_view(), name="schema"),
    # The split view loads its start-up script from ?script instead of inlining it, so Swagger UI
    # runs under the site's script-src 'self'; only its own <style> element needs an exception.
    path("docs/", csp_update({"style-src": ["'unsafe-inline'"]})(SwaggerView.as_view(url_name="api:schema")),
         name="docs"),
    # Redoc injects its styles at run time and searches in a blob: worker.
    path("redoc/", csp_update({"style-src": ["'unsafe-inline'"], "worker-src": ["'self'", "blob:"]})(
        RedocView.as_view(url_name="api:schema")), name="redoc"),
]
