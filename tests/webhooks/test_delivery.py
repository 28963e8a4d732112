"""Sending: signed POSTs to a real local receiver, retried with backoff, marked delivered or failed."""

from __future__ import annotations

import json
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from registry import services
from tests.factories import make_prompt
from webhooks import delivery
from webhooks.models import DeliveryStatus, Webhook, WebhookDelivery
from webhooks.signing import verify

pytestmark = pytest.mark.django_db


def queue_publish(url: str, publisher) -> Webhook:
    hook = Webhook.objects.create(name="ci", url=url, events=["version.published"])
    services.publish(make_prompt("greet"), acting_user=publisher, note="first", labels=["staging"])
    return hook


def test_a_delivery_is_signed_and_verifies(receiver, publisher):
    hook = queue_publish(receiver.url, publisher)
    [attempt] = delivery.deliver_due()
    assert attempt.status == DeliveryStatus.DELIVERED and attempt.last_status_code == 200
    [(headers, body)] = receiver.requests
    assert headers["X-Registry-Event"] == "version.published"
    assert headers["X-Registry-Delivery"] == str(attempt.delivery_id)
    assert headers["Content-Type"] == "application/json"
    assert verify(hook.secret, headers["X-Registry-Timestamp"], body, headers["X-Registry-Signature"])
    assert not verify("wrong-secret", headers["X-Registry-Timestamp"], body, headers["X-Registry-Signature"])
    assert json.loads(body)["entry"]["key"] == "greet"


def test_a_failing_receiver_is_retried_with_backoff_then_delivered(receiver, publisher):
    receiver.statuses = [500, 503, 200]
    queue_publish(receiver.url, publisher)
    start = timezone.now()

    [first] = delivery.deliver_due(now=start)
    assert (first.status, first.attempts, first.last_status_code) == ("pending", 1, 500)
    assert first.next_attempt_at == start + timedelta(seconds=delivery.BACKOFF_S[0])
    assert "HTTP 500" in first.last_error
    assert delivery.deliver_due(now=start + timedelta(seconds=5)) == []  # not due yet

    [second] = delivery.deliver_due(now=start + timedelta(seconds=10))
    assert (second.attempts, second.last_status_code) == (2, 503)
    assert second.next_attempt_at == start + timedelta(seconds=10 + delivery.BACKOFF_S[1])

    [third] = delivery.deliver_due(now=start + timedelta(seconds=40))
    assert (third.status, third.attempts, third.last_status_code) == ("delivered", 3, 200)
    assert third.delivered_at is not None
    ids = {headers["X-Registry-Delivery"] for headers, _ in receiver.requests}
    assert len(receiver.requests) == 3 and len(ids) == 1  # the same delivery id on every retry


def test_gives_up_after_the_last_attempt(receiver, publisher):
    receiver.statuses = [500]
    queue_publish(receiver.url, publisher)
    when = timezone.now()
    for _ in range(delivery.MAX_ATTEMPTS):
        delivery.deliver_due(now=when)
        when += timedelta(hours=2)
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts) == (DeliveryStatus.FAILED, delivery.MAX_ATTEMPTS)
    assert delivery.deliver_due(now=when) == []


def test_an_unreachable_receiver_is_an_error_not_an_exception(settings, publisher):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
    queue_publish("http://127.0.0.1:9/closed-port", publisher)
    [attempt] = delivery.deliver_due()
    assert attempt.status == "pending" and attempt.last_status_code is None and attempt.last_error


def test_a_url_resolving_to_loopback_is_not_sent_when_loopback_is_off(receiver, publisher, settings):
    queue_publish(receiver.url, publisher)
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    [attempt] = delivery.deliver_due()
    assert attempt.status == DeliveryStatus.FAILED and "loopback" in attempt.last_error
    assert receiver.requests == []


def test_redirects_are_not_followed(receiver, publisher):
    receiver.statuses = [302]
    queue_publish(receiver.url, publisher)
    [attempt] = delivery.deliver_due()
    assert attempt.status == "pending" and attempt.last_status_code == 302


def test_a_claimed_delivery_is_not_claimed_twice(receiver, publisher):
    queue_publish(receiver.url, publisher)
    assert len(delivery.claim()) == 1
    assert delivery.claim() == []  # leased to the first worker


def test_the_management_command_sends_due_deliveries(receiver, publisher, capsys):
    queue_publish(receiver.url, publisher)
    call_command("deliver_webhooks", "--once")
    assert "1 attempted, 1 delivered" in capsys.readouterr().out
    assert WebhookDelivery.objects.get().status == DeliveryStatus.DELIVERED


def test_nothing_is_sent_inside_the_transaction_only_scheduled_for_after_commit(
        receiver, publisher, django_capture_on_commit_callbacks):
    Webhook.objects.create(name="ci", url=receiver.url, events=["version.published"])
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.publish(make_prompt("greet"), acting_user=publisher, note="first", labels=["staging"])
    assert receiver.requests == []
    assert delivery.wake in callbacks


@pytest.mark.django_db(transaction=True)
def test_the_background_thread_delivers_after_commit_and_then_stops(receiver, settings):
    from tests.factories import make_user

    publisher = make_user("Publishers")
    Webhook.objects.create(name="ci", url=receiver.url, events=["version.published"])
    settings.WEBHOOKS_DELIVERY_THREAD = True
    services.publish(make_prompt("greet"), acting_user=publisher, note="first", labels=["staging"])
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (receiver.requests and delivery._thread is None):
        time.sleep(0.05)
    assert len(receiver.requests) == 1
    assert WebhookDelivery.objects.get().status == DeliveryStatus.DELIVERED
    assert delivery._thread is None  # nothing pending: the thread ended


@pytest.mark.parametrize("argv, program", [
    (["/venv/bin/daphne", "config.asgi:application"], "daphne"),
    (["/venv/lib/python3.11/site-packages/daphne/__main__.py", "-b", "0.0.0.0"], "daphne"),
    (["/venv/lib/python3.11/site-packages/uvicorn/__main__.py", "config.asgi:application"], "uvicorn"),
    (["manage.py", "runserver"], "manage.py"),
    (["/venv/bin/pytest"], "pytest"),
])
def test_server_processes_are_recognised(argv, program):
    assert delivery.server_program(argv) == program
