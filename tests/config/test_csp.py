"""The Content-Security-Policy every page carries, the API docs' own policies, and templates that need no
inline script."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings

from tests.factories import make_prompt, make_user

pytestmark = pytest.mark.django_db

TEMPLATES = Path(settings.BASE_DIR) / "templates"


def policy(response) -> dict[str, list[str]]:
    header = response["Content-Security-Policy"]
    return {part.split()[0]: part.split()[1:] for part in header.split(";") if part.strip()}


STRICT = {
    "default-src": ["'self'"],
    "script-src": ["'self'"],
    "object-src": ["'none'"],
    "base-uri": ["'self'"],
    "frame-ancestors": ["'none'"],
    "form-action": ["'self'"],
    "img-src": ["'self'", "data:"],
    "media-src": ["'self'", "data:"],
    "style-src": ["'self'"],
    "style-src-attr": ["'unsafe-inline'"],
}


def test_admin_pages_carry_the_strict_policy(client):
    login = client.get("/admin/login/")
    assert policy(login) == STRICT
    prompt = make_prompt()
    client.force_login(make_user("Publishers"))
    diff = client.get(f"/admin/registry/prompt/{prompt.pk}/diff/")
    assert diff.status_code == 200 and policy(diff) == STRICT
    assert "'unsafe-inline'" not in policy(diff)["script-src"] and "'unsafe-eval'" not in policy(diff)["script-src"]


def test_the_api_is_covered_too(client):
    response = client.get("/api/v1/prompts/")
    assert response.status_code in (401, 403)
    assert policy(response) == STRICT


def test_swagger_ui_loads_its_start_script_from_this_site_and_only_its_styles_are_relaxed(client):
    client.force_login(make_user("Editors"))  # the documentation is for signed-in users
    page = client.get("/api/docs/")
    assert page.status_code == 200
    rules = policy(page)
    assert rules["script-src"] == ["'self'"]
    assert rules["style-src"] == ["'self'", "'unsafe-inline'"]
    html = page.content.decode()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), "an inline script would be blocked"
    script_url = re.search(r'<script src="([^"]*script=[^"]*)"', html).group(1).replace("&amp;", "&")
    script = client.get(script_url)
    assert script.status_code == 200 and script["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in script.content.decode()


def test_redoc_gets_its_styles_and_search_worker(client):
    client.force_login(make_user("Editors"))
    rules = policy(client.get("/api/redoc/"))
    assert rules["script-src"] == ["'self'"]
    assert "'unsafe-inline'" in rules["style-src"] and "blob:" in rules["worker-src"]


@pytest.mark.parametrize("path", sorted(str(p.relative_to(TEMPLATES)) for p in TEMPLATES.rglob("*.html")))
def test_project_templates_have_no_inline_script_or_event_handler(path):
    text = (TEMPLATES / path).read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", text), "move the script into a static file"
    assert not re.search(r"\son[a-z]+\s*=", text), "use a data- attribute and a static script instead"
    assert "javascript:" not in text.lower()
