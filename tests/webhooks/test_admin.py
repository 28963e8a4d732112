"""The webhook admin: secret shown once, clear URL errors, deliveries read-only with 'retry now'."""

from __future__ import annotations

import pytest
from django.contrib.messages import get_messages

from webhooks.models import DeliveryStatus, Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


def _cookies_and_session(client) -> str:
    """Everything the browser and the session store carry between requests."""
    from django.contrib.sessions.models import Session

    sessions = [str(s.get_decoded()) for s in Session.objects.all()]
    return " ".join([*(m.value for m in client.cookies.values()), *sessions])


def test_creating_a_webhook_shows_its_secret_once_in_the_page_and_never_in_a_cookie(admin_client, settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    response = admin_client.post("/admin/webhooks/webhook/add/", {
        "name": "release-bot", "url": "https://hooks.example.com/registry", "events": ["version.published"],
        "active": "on"})
    hook = Webhook.objects.get()
    assert response.status_code == 200 and hook.secret in response.content.decode()
    assert "no-store" in response["Cache-Control"]
    assert hook.secret not in " ".join(m.value for m in response.cookies.values())
    assert hook.secret not in _cookies_and_session(admin_client)
    assert [str(m) for m in get_messages(response.wsgi_request)] == []
    assert hook.created_by.username == "admin"
    change_page = admin_client.get(f"/admin/webhooks/webhook/{hook.pk}/change/").content.decode()
    assert hook.secret not in change_page and hook.secret[6:12] not in change_page
    assert hook.secret not in admin_client.get("/admin/webhooks/webhook/").content.decode()


def test_rotating_a_secret_shows_the_new_one_once_in_the_page_and_never_in_a_cookie(admin_client):
    hook = Webhook.objects.create(name="x", url="https://hooks.example.com/", events=["label.moved"])
    old = hook.secret
    response = admin_client.post("/admin/webhooks/webhook/", {
        "action": "rotate_secret", "_selected_action": [hook.pk]})
    hook.refresh_from_db()
    assert hook.secret != old
    assert response.status_code == 200 and hook.secret in response.content.decode()
    assert hook.secret not in " ".join(m.value for m in response.cookies.values())
    assert hook.secret not in _cookies_and_session(admin_client)
    assert hook.secret not in admin_client.get("/admin/webhooks/webhook/").content.decode()


def test_a_self_pointing_url_is_refused_in_the_admin(admin_client, settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = ""
    response = admin_client.post("/admin/webhooks/webhook/add/", {
        "name": "loop", "url": "http://127.0.0.1:8000/admin/", "events": ["label.moved"], "active": "on"})
    assert response.status_code == 200
    assert "this server itself" in response.content.decode()
    assert not Webhook.objects.exists()


def test_retry_now_requeues_failed_deliveries(admin_client):
    hook = Webhook.objects.create(name="x", url="https://hooks.example.com/", events=["label.moved"])
    row = WebhookDelivery.objects.create(webhook=hook, event="label.moved", payload={}, status="failed", attempts=6)
    response = admin_client.post("/admin/webhooks/webhookdelivery/", {
        "action": "retry_now", "_selected_action": [row.pk]}, follow=True)
    assert response.status_code == 200
    row.refresh_from_db()
    assert row.status == DeliveryStatus.PENDING
    page = admin_client.get(f"/admin/webhooks/webhookdelivery/{row.pk}/change/")
    assert page.status_code == 200


def test_publishers_may_manage_webhooks_and_auditors_only_look(publisher, auditor, editor):
    from webhooks.roles import grant_publishers

    grant_publishers()  # what post_migrate does; test users' groups may have been (re)created since
    publisher, auditor, editor = (type(u).objects.get(pk=u.pk) for u in (publisher, auditor, editor))
    assert publisher.has_perms(["webhooks.add_webhook", "webhooks.change_webhook", "webhooks.view_webhookdelivery"])
    assert auditor.has_perm("webhooks.view_webhookdelivery") and not auditor.has_perm("webhooks.change_webhook")
    assert not editor.has_perm("webhooks.view_webhook")
