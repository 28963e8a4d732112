"""manage.py deliver_webhooks [--once]"""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections

from webhooks import delivery


class Command(BaseCommand):
    help = ("Send due webhook deliveries (signed, retried with backoff). Safe beside the servers' own "
            "sender threads: each delivery is claimed by one worker.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--once", action="store_true", help="Send what is due now and exit.")
        parser.add_argument("--interval", type=float, default=5.0, help="Seconds between polls (default 5).")

    def handle(self, *args: Any, once: bool, interval: float, **options: Any) -> None:
        if not interval >= 0.5:  # also refuses NaN
            raise CommandError(f"--interval must be at least 0.5 seconds (got {interval}); a shorter one only "
                               "loads the database.")
        while True:
            attempted = delivery.deliver_due()
            if attempted and options.get("verbosity", 1) >= 1:
                for item in attempted:
                    extra = f" ({item.last_error})" if item.last_error else ""
                    self.stdout.write(f"{item.delivery_id} {item.event} → {item.webhook.url}: {item.status}{extra}")
            if once:
                delivered = sum(1 for item in attempted if item.status == "delivered")
                self.stdout.write(f"{len(attempted)} attempted, {delivered} delivered")
                return
            close_old_connections()
            time.sleep(interval)
