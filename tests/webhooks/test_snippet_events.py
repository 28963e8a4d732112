"""Snippet publishes and label moves queue the webhook events the other kinds do."""

from __future__ import annotations

import pytest

from registry.models import ChangeLogEntry
from registry.release import services
from tests.factories import make_snippet
from webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def no_webhook_thread(settings):
    settings.WEBHOOKS_DELIVERY_THREAD = False


def test_a_snippet_publish_and_label_move_queue_webhook_events_and_change_log_rows(publisher):
    Webhook.objects.create(name="ci", url="https://hooks.example.com/x", events=["version.published", "label.moved"])
    snippet = make_snippet("house-style")
    before = ChangeLogEntry.objects.count()
    services.publish(snippet, acting_user=publisher, note="first", labels=["staging"])
    events = [(d.payload["event"], d.payload["entry"]["kind"], d.payload["entry"]["key"])
              for d in WebhookDelivery.objects.order_by("id")]
    assert ("version.published", "snippet", "house-style") in events
    assert ("label.moved", "snippet", "house-style") in events
    assert ChangeLogEntry.objects.filter(entry_kind="snippet", entry_key="house-style").count() >= 1
    assert ChangeLogEntry.objects.count() > before
