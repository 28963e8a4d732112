"""``python manage.py oauth_prune_registrations``: delete OAuth client registrations nobody used."""

from __future__ import annotations

from datetime import timedelta

from django.core.management.base import BaseCommand

from oauth.registrations import prune_unused


class Command(BaseCommand):
    help = ("Delete dynamically registered and metadata-document OAuth clients that no user connected "
            "within OAUTH_UNUSED_REGISTRATION_HOURS (default 24) of registering.")

    def add_arguments(self, parser):
        parser.add_argument("--hours", type=float, default=None,
                            help="Override OAUTH_UNUSED_REGISTRATION_HOURS for this run.")

    def handle(self, *args, hours: float | None, **options):
        older_than = None if hours is None else timedelta(hours=hours)
        self.stdout.write(f"Deleted {prune_unused(older_than)} unused OAuth registration(s).")
