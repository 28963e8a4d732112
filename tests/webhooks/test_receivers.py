"""The outbox: delivery rows are written in the auditing transaction and only in it."""

from __future__ import annotations

import pytest
from django.db import transaction

from registry.errors import ApprovalRequired
from registry.models import AuditEntry
from registry.release import services
from tests.factories import make_prompt, release
from webhooks import delivery
from webhooks.models import Webhook, WebhookDelivery

pytestmark = pytest.mark.django_db


@pytest.fixture
def hook(settings):
    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
    return Webhook.objects.create(name="ci", url="http://127.0.0.1:9/hook",
                                  events=["version.published", "label.moved"])


def test_publishing_queues_one_delivery_per_subscribed_event(hook, publisher, django_capture_on_commit_callbacks):
    prompt = make_prompt("greet")
    with django_capture_on_commit_callbacks() as callbacks:
        services.publish(prompt, acting_user=publisher, note="first", labels=["staging"])
    rows = list(WebhookDelivery.objects.order_by("id"))
    assert [row.event for row in rows] == ["version.published", "label.moved"]
    assert rows[0].payload["entry"] == {"kind": "prompt", "key": "greet", "id": prompt.pk}
    assert rows[0].payload["to_version"] == 1 and rows[1].payload["label"] == "staging"
    assert delivery.wake in callbacks  # sending waits for the commit


def test_events_not_subscribed_and_inactive_hooks_queue_nothing(hook, publisher):
    Webhook.objects.create(name="off", url="https://hooks.example.com/", events=["version.published"], active=False)
    prompt = make_prompt("greet")
    services.set_archived(prompt, archived=True, acting_user=publisher)
    release(make_prompt("other"), labels=("staging",))
    assert WebhookDelivery.objects.filter(webhook__name="off").count() == 0
    assert WebhookDelivery.objects.filter(webhook=hook).count() == 2  # published + label moved of "other"


def test_a_rolled_back_transaction_creates_no_delivery(hook, publisher, django_capture_on_commit_callbacks):
    prompt = make_prompt("greet")
    with django_capture_on_commit_callbacks() as callbacks, pytest.raises(RuntimeError), transaction.atomic():
        services.publish(prompt, acting_user=publisher, note="first", labels=["staging"])
        assert WebhookDelivery.objects.count() == 2
        raise RuntimeError("something later failed")
    assert WebhookDelivery.objects.count() == 0
    assert AuditEntry.objects.filter(action="publish").count() == 0
    assert callbacks == []


def test_a_refused_production_publish_creates_no_delivery(hook, superuser):
    prompt = make_prompt("greet")
    with pytest.raises(ApprovalRequired):
        services.publish(prompt, acting_user=superuser, note="no approval")
    assert WebhookDelivery.objects.count() == 0


def test_review_events(settings, editor, publisher):
    from registry.release import reviews

    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
    Webhook.objects.create(name="reviews", url="http://127.0.0.1:9/", events=[
        "review.requested", "review.approved", "review.rejected"])
    prompt = make_prompt("greet")
    first = reviews.request_publication(prompt, acting_user=editor, note="please")
    reviews.reject(first, acting_user=publisher, comment="not yet")
    second = reviews.request_publication(prompt, acting_user=editor, note="again")
    reviews.approve(second, acting_user=publisher)
    assert list(WebhookDelivery.objects.order_by("id").values_list("event", flat=True)) == [
        "review.requested", "review.rejected", "review.requested", "review.approved"]


def test_rollout_and_override_events(settings, release_manager):
    from registry.release.rollouts import set_rollout

    settings.WEBHOOKS_ALLOWED_NETWORKS = "127.0.0.0/8,::1/128"
    Webhook.objects.create(name="all", url="http://127.0.0.1:9/", events=["rollout.changed", "label.moved"])
    prompt = make_prompt("greet")
    release(prompt, labels=("staging",))
    prompt.description = "v2"
    prompt.save()
    release(prompt, note="second", labels=())
    WebhookDelivery.objects.all().delete()
    set_rollout(prompt, label="staging", version_number=2, percent=20, acting_user=release_manager, note="canary")
    services.move_label(prompt, label="production", version_number=2, acting_user=release_manager, note="hotfix",
                        override_reason="incident 9")
    rows = list(WebhookDelivery.objects.order_by("id").values_list("event", "payload"))
    assert [(event, payload["action"]) for event, payload in rows] == [
        ("rollout.changed", "rollout_changed"), ("label.moved", "override"), ("label.moved", "label_move")]
    assert rows[1][1]["note"] == "incident 9" and rows[2][1]["to_version"] == 2


def test_a_long_note_is_cut_in_the_payload_and_kept_whole_in_the_audit_log(hook, publisher):
    from webhooks.events import NOTE_CHARS

    note = "why" + " why" * 99_999
    services.publish(make_prompt("greet"), acting_user=publisher, note=note, labels=["staging"])
    payload = WebhookDelivery.objects.filter(event="version.published").get().payload
    assert payload["note"] == note[:NOTE_CHARS] and payload["note_truncated"] is True
    assert AuditEntry.objects.get(action="publish").note == note


def test_an_incident_rollback_is_announced_as_a_label_move_before_the_rollback(hook, publisher):
    from tests.factories import release

    prompt = make_prompt("greet")
    release(prompt, note="v1")
    prompt.description = "v2"
    prompt.save()
    release(prompt, note="v2")
    WebhookDelivery.objects.all().delete()
    services.rollback(prompt, acting_user=publisher, note="v2 breaks the support bot", to_version=1)
    rows = list(WebhookDelivery.objects.order_by("id").values_list("event", "payload"))
    assert [(event, payload["action"]) for event, payload in rows] == [
        ("label.moved", "incident_rollback"), ("label.moved", "rollback")]
    assert rows[0][1]["note"] == "v2 breaks the support bot" and rows[0][1]["to_version"] == 1


def test_a_webhook_added_inside_the_auditing_transaction_gets_its_later_events(hook, publisher):
    """The active webhooks are read once per transaction; one saved in it is seen from then on."""
    prompt = make_prompt("greet")
    with transaction.atomic():
        services.publish(prompt, acting_user=publisher, note="first", labels=["staging"])
        late = Webhook.objects.create(name="late", url="http://127.0.0.1:9/late", events=["label.moved"])
        services.move_label(prompt, label="qa", version_number=1, acting_user=publisher, note="qa too")
    assert list(WebhookDelivery.objects.filter(webhook=late).values_list("event", flat=True)) == ["label.moved"]
    assert WebhookDelivery.objects.filter(webhook=hook).count() == 3


@pytest.mark.django_db(transaction=True)
def test_the_active_webhooks_are_read_once_for_all_audit_rows_of_one_transaction(hook, publisher):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    prompt = make_prompt("greet")
    with CaptureQueriesContext(connection) as captured:
        services.publish(prompt, acting_user=publisher, note="first", labels=["staging", "qa"])
    assert sum('FROM "webhooks_webhook"' in q["sql"] for q in captured.captured_queries) == 1
    assert [row.event for row in WebhookDelivery.objects.order_by("id")] == [
        "version.published", "label.moved", "label.moved"]


def test_a_webhook_deleted_in_a_rolled_back_savepoint_still_gets_the_transactions_later_events(hook, publisher):
    """The scope's list of webhooks is dropped once one is written, so a rollback of that write
    inside the scope cannot leave a list that misses a webhook which still exists."""
    prompt = make_prompt("greet")
    with transaction.atomic():
        services.publish(prompt, acting_user=publisher, note="first", labels=["staging"])
        try:
            with transaction.atomic():
                Webhook.objects.filter(pk=hook.pk).delete()
                raise RuntimeError("operator changed their mind")
        except RuntimeError:
            pass
        services.move_label(prompt, label="qa", version_number=1, acting_user=publisher, note="qa too")
    assert WebhookDelivery.objects.filter(webhook=hook).count() == 3
