"""``python manage.py mcp_prune_sessions``: delete expired and long-ended legacy MCP sessions."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from mcp_endpoint.wire.sessions import prune


class Command(BaseCommand):
    help = "Delete MCP sessions idle past SESSION_IDLE_SECONDS, or ended more than --keep-ended seconds ago."

    def add_arguments(self, parser):
        parser.add_argument("--keep-ended", type=float, default=3600.0,
                            help="Keep ended sessions this many seconds (default 3600) so late requests get 404.")

    def handle(self, *args, keep_ended: float, **options):
        self.stdout.write(f"Deleted {prune(keep_ended_seconds=keep_ended)} MCP session(s).")
