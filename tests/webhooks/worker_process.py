"""A webhook delivery worker in its own process, as a second server or `deliver_webhooks` would be.

    python -m tests.webhooks.worker_process queue URL COUNT      # COUNT pending deliveries to URL
    python -m tests.webhooks.worker_process work LEASE_S SECONDS GO_FILE
        # wait for GO_FILE, then deliver what is due, again and again, for SECONDS
"""

from __future__ import annotations

import os
import sys
import time

import django


def main(argv: list[str]) -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from webhooks import delivery
    from webhooks.models import Webhook, WebhookDelivery

    if argv[0] == "queue":
        hook = Webhook.objects.create(name="ci", url=argv[1], events=["version.published"])
        WebhookDelivery.objects.bulk_create(
            [WebhookDelivery(webhook=hook, event="version.published", payload={"n": n}) for n in range(int(argv[2]))])
        return
    delivery.LEASE_S = float(argv[1])
    seconds, go_file = float(argv[2]), argv[3]
    while not os.path.exists(go_file):
        time.sleep(0.01)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        delivery.deliver_due()
        time.sleep(0.05)


if __name__ == "__main__":
    main(sys.argv[1:])
