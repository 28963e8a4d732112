"""Request bodies the REST API cannot use are a 400 with a reason, whatever their shape."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.django_db

DEEP_ARRAY = b"[" * 100_000 + b"]" * 100_000
DEEP_OBJECT = b'{"a":' * 50_000 + b"1" + b"}" * 50_000


@pytest.mark.parametrize("path", ["/api/v1/reviews/", "/api/v1/import/", "/api/v1/prompts/"])
@pytest.mark.parametrize("body", [DEEP_ARRAY, DEEP_OBJECT], ids=["array", "object"])
def test_json_nested_past_the_recursion_limit_is_a_400(as_publisher, path, body):
    response = as_publisher.generic("POST", path, body, content_type="application/json")
    assert response.status_code == 400, response.content[:300]
    assert "nested too deeply" in response.json()["detail"]
