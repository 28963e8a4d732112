"""API clients authenticated with DRF tokens, one per role."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient


@pytest.fixture(autouse=True)
def no_webhook_thread(settings):
    settings.WEBHOOKS_DELIVERY_THREAD = False


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def as_editor(editor):
    return client_for(editor)


@pytest.fixture
def as_publisher(publisher):
    return client_for(publisher)


@pytest.fixture
def as_second_publisher(second_publisher):
    return client_for(second_publisher)


@pytest.fixture
def as_auditor(auditor):
    return client_for(auditor)


@pytest.fixture
def as_superuser(superuser):
    return client_for(superuser)
