"""Property-based: schemathesis generates requests from the OpenAPI schema for every operation
(valid and edge-case payloads, path and query values) and none may answer with a server error."""

from __future__ import annotations

import json

import pytest
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token

from tests.factories import make_prompt, make_resource, make_user, release

schemathesis = pytest.importorskip("schemathesis")
hypothesis = pytest.importorskip("hypothesis")

EXAMPLES_PER_OPERATION = 6


@pytest.mark.django_db
def test_generated_requests_to_every_operation_never_cause_a_server_error(settings):
    settings.WEBHOOKS_DELIVERY_THREAD = False
    token = Token.objects.create(user=make_user(None)).key
    release(make_prompt("greet"), labels=("staging",))
    release(make_resource("docs://style"), labels=("staging",))
    raw = SchemaGenerator().get_schema(request=None, public=True)
    schema = schemathesis.openapi.from_dict(json.loads(json.dumps(raw, default=str)))
    schema.app = get_wsgi_application()  # in-process: the requests see this test's data
    failures: list[str] = []
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 50

    # Like Django's test client: the raw WSGI app must not close the test's transaction-holding connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        _exercise_all(operations, token, failures)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert failures == []


def _exercise_all(operations, token: str, failures: list[str]) -> None:
    for operation in operations:
        @hypothesis.given(case=operation.as_strategy())
        @hypothesis.settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, database=None,
                             suppress_health_check=list(hypothesis.HealthCheck), derandomize=True)
        def exercise(case):
            response = case.call(headers={"Authorization": f"Token {token}"})
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} {case.query} {case.body!r:.300} -> "
                                f"{response.status_code}")

        exercise()
