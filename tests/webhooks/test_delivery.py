"""Sending: signed POSTs to a real local receiver, retried with backoff, marked delivered or failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from datetime import timedelta
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest
from django.core.management import call_command
from django.utils import timezone

from registry.release import services
from tests.factories import make_prompt
from webhooks import delivery
from webhooks.models import DeliveryStatus, Webhook, WebhookDelivery
from webhooks.signing import verify

pytestmark = pytest.mark.django_db

ROOT = Path(__file__).resolve().parents[2]


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


def test_the_management_command_refuses_a_polling_interval_that_would_hammer_the_database():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="--interval"):
        call_command("deliver_webhooks", "--interval", "0")


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
    while time.monotonic() < deadline and not (receiver.requests and delivery.sender.thread is None):
        time.sleep(0.05)
    assert len(receiver.requests) == 1
    assert WebhookDelivery.objects.get().status == DeliveryStatus.DELIVERED
    assert delivery.sender.thread is None  # nothing pending: the thread ended


@pytest.mark.parametrize("argv, program", [
    (["/venv/bin/daphne", "config.asgi:application"], "daphne"),
    (["/venv/lib/python3.11/site-packages/daphne/__main__.py", "-b", "0.0.0.0"], "daphne"),
    (["/venv/lib/python3.11/site-packages/uvicorn/__main__.py", "config.asgi:application"], "uvicorn"),
    (["manage.py", "runserver"], "manage.py"),
    (["/venv/bin/pytest"], "pytest"),
])
def test_server_processes_are_recognised(argv, program):
    assert delivery.server_program(argv) == program


def test_the_delivery_id_is_in_the_signed_body_and_the_header(receiver, publisher):
    hook = queue_publish(receiver.url, publisher)
    [attempt] = delivery.deliver_due()
    [(headers, body)] = receiver.requests
    assert json.loads(body)["delivery_id"] == headers["X-Registry-Delivery"] == str(attempt.delivery_id)
    assert verify(hook.secret, headers["X-Registry-Timestamp"], body, headers["X-Registry-Signature"])


def test_the_response_body_is_not_stored(receiver, publisher):
    receiver.statuses = [500]
    receiver.answer_body = b"internal stack trace: password=hunter2"
    queue_publish(receiver.url, publisher)
    [attempt] = delivery.deliver_due()
    row = WebhookDelivery.objects.filter(pk=attempt.pk).values().get()
    assert row["last_status_code"] == 500 and row["last_error"] == "The receiver answered HTTP 500."
    assert not any("hunter2" in str(value) for value in row.values())


def _many_deliveries(url: str, count: int) -> Webhook:
    hook = Webhook.objects.create(name="ci", url=url, events=["version.published"])
    WebhookDelivery.objects.bulk_create(
        [WebhookDelivery(webhook=hook, event="version.published", payload={"n": n}) for n in range(count)])
    return hook


def _run_workers(count: int, seconds: float) -> list[BaseException]:
    """`count` delivery workers polling for `seconds`, each in its own thread and database connection."""
    from django.db import connection as thread_connection

    errors: list[BaseException] = []
    start = threading.Barrier(count)

    def worker() -> None:
        try:
            start.wait()
            end = time.monotonic() + seconds
            while time.monotonic() < end:
                delivery.deliver_due()
                time.sleep(0.05)
        except BaseException as exc:  # reported by the test
            errors.append(exc)
        finally:
            thread_connection.close()

    threads = [threading.Thread(target=worker) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return errors


@pytest.mark.django_db(transaction=True)
def test_two_worker_threads_against_a_slow_receiver_post_each_delivery_exactly_once(receiver, monkeypatch):
    from django.db import connection as main_connection

    if main_connection.vendor == "sqlite":
        pytest.skip("concurrent connections need PostgreSQL (DATABASE_URL=$TEST_POSTGRES_URL, as `make test` runs "
                    "this file); the in-memory SQLite test database locks whole tables, so on SQLite the "
                    "two-process test below covers it")
    # The whole queue takes longer to send (8 x 0.4 s) than one lease lasts (2 s).
    monkeypatch.setattr(delivery, "LEASE_S", 2)
    receiver.delay_s = 0.4
    _many_deliveries(receiver.url, 8)
    assert _run_workers(2, seconds=5) == []
    sent = [headers["X-Registry-Delivery"] for headers, _ in receiver.requests]
    assert len(sent) == 8 and len(set(sent)) == 8
    assert list(WebhookDelivery.objects.order_by().values_list("status", "attempts").distinct()) == [("delivered", 1)]


def test_a_stale_record_cannot_overwrite_a_delivered_row(receiver, publisher):
    queue_publish(receiver.url, publisher)
    start = timezone.now()
    [slow] = delivery.claim(now=start)  # this worker's lease runs out before it records
    [taken_over] = delivery.claim(now=start + timedelta(seconds=delivery.LEASE_S + 1))
    delivery.record(taken_over, delivery.Outcome(True, status_code=200), now=start + timedelta(seconds=62))
    delivery.record(slow, delivery.Outcome(False, error="timed out"), now=start + timedelta(seconds=63))
    row = WebhookDelivery.objects.get()
    assert (row.status, row.attempts, row.last_error) == (DeliveryStatus.DELIVERED, 1, "")


def test_a_leased_delivery_is_not_claimed_again_even_after_retry_now(receiver, publisher, admin_client):
    queue_publish(receiver.url, publisher)
    [leased] = delivery.claim()
    admin_client.post("/admin/webhooks/webhookdelivery/", {"action": "retry_now", "_selected_action": [leased.pk]})
    assert delivery.claim() == []


def test_a_receiver_that_is_down_gets_one_request_per_backoff_step(receiver, publisher):
    receiver.statuses = [503]
    hook = _many_deliveries(receiver.url, 5)
    start = timezone.now()
    attempted = delivery.deliver_due(now=start)
    assert len(receiver.requests) == 1 and len(attempted) == 1
    retry_at = start + timedelta(seconds=delivery.BACKOFF_S[0])
    assert set(hook.deliveries.values_list("next_attempt_at", flat=True)) == {retry_at}
    assert sorted(hook.deliveries.values_list("attempts", flat=True)) == [0, 0, 0, 0, 1]
    receiver.statuses = [503, 200]
    delivery.deliver_due(now=retry_at)
    assert hook.deliveries.filter(status=DeliveryStatus.DELIVERED).count() == 5  # all go once it is back
    assert len(receiver.requests) == 6


def test_an_unknown_event_name_is_never_sent_as_a_header(receiver, publisher):
    hook = Webhook.objects.create(name="ci", url=receiver.url, events=["version.published"])
    WebhookDelivery.objects.create(webhook=hook, event="version.published\r\nX-Injected: 1", payload={})
    [attempt] = delivery.deliver_due()
    assert attempt.status == DeliveryStatus.FAILED and receiver.requests == []


def test_on_postgresql_a_worker_skips_a_delivery_another_worker_is_claiming(receiver, transactional_db):
    from django.db import connection as main_connection

    if not main_connection.features.has_select_for_update_skip_locked:
        pytest.skip("SKIP LOCKED needs PostgreSQL (run with DATABASE_URL=$TEST_POSTGRES_URL, as `make test` does)")
    hook = _many_deliveries(receiver.url, 2)
    first, second = hook.deliveries.order_by("id")
    locked, release = threading.Event(), threading.Event()

    def other_worker() -> None:
        from django.db import connection as thread_connection
        from django.db import transaction as thread_transaction

        try:
            with thread_transaction.atomic():
                list(WebhookDelivery.objects.select_for_update().filter(pk=first.pk))
                locked.set()
                release.wait(10)
        finally:
            thread_connection.close()

    thread = threading.Thread(target=other_worker)
    thread.start()
    try:
        assert locked.wait(10)
        started = time.monotonic()
        claimed = delivery.claim(2)
        assert [d.pk for d in claimed] == [second.pk] and time.monotonic() - started < 2
    finally:
        release.set()
        thread.join(10)


def _database_urls() -> list:
    urls = [pytest.param("sqlite", id="sqlite-file")]
    urls.append(pytest.param("postgres", id="postgresql", marks=pytest.mark.skipif(
        not os.environ.get("TEST_POSTGRES_URL"), reason="TEST_POSTGRES_URL not set (CI sets it)")))
    return urls


@pytest.fixture
def worker_database(request, tmp_path):
    """A fresh, migrated database for worker processes: a SQLite file, or a new PostgreSQL database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'workers.sqlite3'}"
        return
    import psycopg

    admin_url = os.environ["TEST_POSTGRES_URL"]
    admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=5)
    name = f"webhook_workers_{uuid.uuid4().hex[:12]}"
    admin.execute(f'CREATE DATABASE "{name}"')
    parts = urlsplit(admin_url)
    try:
        yield urlunsplit((parts.scheme, parts.netloc, "/" + name, parts.query, parts.fragment))
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def _child(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{args} exited {done.returncode}: {done.stdout} {done.stderr}"
    return done


@pytest.mark.parametrize("worker_database", _database_urls(), indirect=True)
def test_two_worker_processes_against_a_slow_receiver_post_each_delivery_exactly_once(
        worker_database, receiver, tmp_path):
    env = dict(os.environ, DATABASE_URL=worker_database, WEBHOOKS_ALLOWED_NETWORKS="127.0.0.0/8",
               DJANGO_SETTINGS_MODULE="config.settings")
    _child(env, "manage.py", "migrate", "--noinput", "-v0")
    _child(env, "-m", "tests.webhooks.worker_process", "queue", receiver.url, "8")
    receiver.delay_s = 0.4  # 8 deliveries take 3.2 s: longer than the 2 s lease
    go = tmp_path / "go"
    workers = [subprocess.Popen([sys.executable, "-m", "tests.webhooks.worker_process", "work", "2", "6", str(go)],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for _ in range(2)]
    time.sleep(0.5)
    go.touch()
    for worker in workers:
        _out, err = worker.communicate(timeout=90)
        assert worker.returncode == 0, err
    sent = [headers["X-Registry-Delivery"] for headers, _ in receiver.requests]
    assert len(sent) == 8 and len(set(sent)) == 8
