"""Admin login throttling: repeated wrong passwords lock out one username from one address, for a while."""

from __future__ import annotations

from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.test import Client
from django.utils import timezone

from tests.factories import make_user

pytestmark = pytest.mark.django_db
PASSWORD = "pw-for-tests-1"


def login(username: str, password: str, address: str = "203.0.113.5"):
    client = Client(REMOTE_ADDR=address)
    response = client.post("/admin/login/?next=/admin/", {"username": username, "password": password})
    return response, client


def fail_until_locked(username: str, address: str = "203.0.113.5") -> None:
    for _ in range(settings.AXES_FAILURE_LIMIT):
        login(username, "wrong-password", address)


def test_the_right_password_is_refused_once_the_username_is_locked_out_from_that_address():
    user = make_user("Editors")
    fail_until_locked(user.username)
    response, client = login(user.username, PASSWORD)
    assert response.status_code == 429
    assert "_auth_user_id" not in client.session


def test_fewer_failures_than_the_limit_do_not_lock_out():
    user = make_user("Editors")
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        login(user.username, "wrong-password")
    response, _ = login(user.username, PASSWORD)
    assert response.status_code == 302 and response["Location"] == "/admin/"


def test_the_lockout_is_per_username_and_address():
    user, other = make_user("Editors"), make_user("Editors")
    fail_until_locked(user.username)
    assert login(user.username, PASSWORD, address="198.51.100.7")[0].status_code == 302
    assert login(other.username, PASSWORD)[0].status_code == 302


def test_the_lockout_expires_after_the_cool_off_time():
    user = make_user("Editors")
    fail_until_locked(user.username)
    assert login(user.username, PASSWORD)[0].status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - settings.AXES_COOLOFF_TIME - timedelta(seconds=1))
    assert login(user.username, PASSWORD)[0].status_code == 302
