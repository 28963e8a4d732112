"""The OpenAPI schema is complete and valid, and every operation in it answers without a 5xx."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import yaml
from django.core.management import call_command
from django.utils import timezone

from registry.models import AuditEntry
from registry.release import reviews
from tests.factories import make_prompt, make_resource, make_snippet, make_template, make_user, release

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(tmp_path):
    out = tmp_path / "schema.yaml"
    # --fail-on-warn turns any drf-spectacular warning (an undocumented endpoint, an unknown type) into an error.
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(out))
    return yaml.safe_load(out.read_text())


@pytest.fixture
def registry_data(editor):
    prompt = make_prompt("greet")
    release(prompt, labels=("staging", "production"))
    prompt.description = "second"
    prompt.save()
    release(prompt, note="second", labels=())
    from registry.release.rollouts import set_rollout

    set_rollout(prompt, label="staging", version_number=2, percent=10, acting_user=None)
    resource = make_resource("docs://style")
    release(resource, labels=("staging",))
    template = make_template("items://{id}")
    release(template, labels=("staging",))
    release(make_snippet("greet"), labels=("staging",))  # /api/v1/snippets/{name}/ takes the same name
    review = reviews.request_publication(prompt, acting_user=editor, note="please", label="production",
                                         version_number=2)
    later = reviews.request_publication(resource, acting_user=editor, note="at launch", label="production",
                                        version_number=1)
    reviews.approve(later, acting_user=make_user("Publishers"), go_live_at=timezone.now() + timedelta(days=1))
    return {"name": "greet", "resource": resource.pk, "template": template.pk, "review": review.pk,
            "audit": AuditEntry.objects.first().pk, "scheduled": later.schedules.get().pk}


def test_the_schema_generates_without_warnings_and_documents_the_api(schema):
    paths = schema["paths"]
    assert "/api/v1/prompts/{name}/publish/" in paths
    assert "/api/v1/reviews/{id}/approve/" in paths
    assert "/api/v1/import/" in paths and "/api/v1/export/" in paths
    assert "tokenAuth" in schema["components"]["securitySchemes"]


def test_schema_and_documentation_pages_are_served_without_a_cdn(as_auditor, client):
    assert as_auditor.get("/api/schema/").status_code == 200
    page = as_auditor.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "swagger-ui" in html and "cdn." not in html and "unpkg" not in html
    assert as_auditor.get("/api/redoc/").status_code == 200


def _fill(path: str, data: dict) -> str:
    entity = path.split("/")[3]
    values = {"name": data["name"], "number": "1", "label": "staging",
              "id": str({"resources": data["resource"], "templates": data["template"], "reviews": data["review"],
                         "audit": data["audit"], "scheduled-releases": data["scheduled"]}.get(entity, 1))}
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], path)


def test_every_operation_answers_without_a_server_error(schema, registry_data, as_superuser):
    answered = []
    for path, operations in schema["paths"].items():
        url = _fill(path, registry_data)
        for method in ("get", "post", "put", "patch"):
            if method not in operations:
                continue
            if method == "get":
                query = {}
                if url.endswith("/lookup/"):
                    query = {"uri": "docs://style", "uri_template": "items://{id}"}
                response = as_superuser.get(url, query)
            else:
                response = getattr(as_superuser, method)(url, {}, format="json")
            assert response.status_code < 500, (method, url, response.content[:500])
            answered.append((method, url, response.status_code))
    assert len(answered) >= 50
    gets = {url: code for method, url, code in answered if method == "get"}
    # Only the greet prompt runs a rollout; the resource, the template and the snippet have none to show.
    not_ok = {url: code for url, code in gets.items() if code != 200}
    assert not_ok == {"/api/v1/snippets/greet/rollouts/staging/": 404,
                      f"/api/v1/resources/{registry_data['resource']}/rollouts/staging/": 404,
                      f"/api/v1/templates/{registry_data['template']}/rollouts/staging/": 404}


def test_anonymous_callers_get_no_schema(client):
    response = client.get("/api/schema/")
    assert response.status_code == 401


@pytest.mark.parametrize("page", ["/api/docs/", "/api/redoc/"])
def test_anonymous_visitors_of_the_documentation_are_sent_to_the_login_page(client, page):
    response = client.get(page)
    assert response.status_code == 302 and response["Location"] == f"/admin/login/?next={page}"


def test_signed_in_admin_users_read_the_documentation(client, auditor):
    client.force_login(auditor)
    assert client.get("/api/docs/").status_code == 200
    assert client.get("/api/schema/").status_code == 200
