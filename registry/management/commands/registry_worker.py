"""manage.py registry_worker [--once] [--interval S]"""

from __future__ import annotations

import logging
import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections

from registry.mail import sending
from registry.release import schedules
from registry.signals import worker_pass

log = logging.getLogger(__name__)


class Command(BaseCommand):
    help = ("The one worker process a deployment runs: carries out scheduled releases at their time, sends "
            "due e-mail and delivers due webhooks, in one loop. Any number may run beside each other and "
            "beside the servers: each release, message and delivery is claimed by one of them.")

    def add_arguments(self, parser) -> None:
        parser.add_argument("--once", action="store_true", help="Do what is due now and exit.")
        parser.add_argument("--interval", type=float, default=5.0,
                            help="Longest sleep between passes in seconds (default 5); a pass comes sooner when "
                                 "something is due sooner.")

    def handle(self, *args: Any, once: bool, interval: float, **options: Any) -> None:
        if not interval >= 0.5:  # also refuses NaN
            raise CommandError(f"--interval must be at least 0.5 seconds (got {interval}); a shorter one only "
                               "loads the database.")
        verbose = options.get("verbosity", 1) >= 1
        while True:
            waits = self._pass(verbose)
            if once:
                return
            close_old_connections()
            time.sleep(min([interval, *waits]))

    def _pass(self, verbose: bool) -> list[float]:
        """One pass: releases first (they may queue mail), then mail, then the other apps' work."""
        waits: list[float | None] = []
        try:
            released = schedules.run_due()
            for row in released:
                if verbose:
                    self.stdout.write(f"release of review #{row.review_id}: {row.status} ({row.outcome})")
            waits.append(schedules.next_due_in())
        except Exception:  # the releases stay scheduled and are tried again on the next pass
            log.exception("scheduled releases failed")
        try:
            sent = sending.send_due()
            if verbose and sent:
                ok = sum(1 for message in sent if message.status == "sent")
                self.stdout.write(f"e-mail: {len(sent)} attempted, {ok} sent")
            waits.append(sending.next_due_in())
        except Exception:
            log.exception("sending e-mail failed")
        for receiver, answer in worker_pass.send_robust(sender=None):
            if isinstance(answer, Exception):
                log.error("worker_pass receiver %r failed: %r", receiver, answer)
            elif isinstance(answer, int | float):
                waits.append(float(answer))
        return [max(0.5, w) for w in waits if w is not None]
