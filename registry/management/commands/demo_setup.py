"""Prepare `make run`: demo users for the three roles, the demo registry, and the URLs to open."""

from __future__ import annotations

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model, password_validation
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand

from registry.models import Prompt

CREDENTIALS_FILE = Path(settings.BASE_DIR) / ".demo-credentials"
DEMO_DATA = Path(settings.BASE_DIR) / "demo" / "registry.yaml"
ROLES = {"admin": None, "editor": "Editors", "publisher": "Publishers", "auditor": "Auditors"}


def demo_password() -> str:
    """One password for the demo logins, made once per checkout and kept out of git."""
    if CREDENTIALS_FILE.exists():
        return CREDENTIALS_FILE.read_text().strip()
    password = secrets.token_urlsafe(12)
    CREDENTIALS_FILE.write_text(password + "\n")
    CREDENTIALS_FILE.chmod(0o600)
    return password


class Command(BaseCommand):
    help = "Create demo logins and load the demo registry if it is empty (used by `make run`)."

    def add_arguments(self, parser):
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default="8000")

    def handle(self, *args, host: str, port: str, **options) -> None:
        password = demo_password()
        User = get_user_model()
        for username, group in ROLES.items():
            user, created = User.objects.get_or_create(username=username)
            if created:
                password_validation.validate_password(password, user)  # the same rules as for editors
                user.set_password(password)
                user.is_staff = True
                user.is_superuser = group is None
                user.email = f"{username}@example.com"  # `make run` prints their e-mail to the console
                user.save()
                if group:
                    user.groups.add(Group.objects.get(name=group))
        if not Prompt.objects.exists() and DEMO_DATA.exists():
            call_command("registry_import", str(DEMO_DATA), publish=True, note="Demo data", verbosity=0)
        base = f"http://{host}:{port}"
        self.stdout.write(
            "\n"
            f"  Admin:     {base}/admin/\n"
            f"  Logins:    admin / editor / publisher / auditor, password: {password}\n"
            f"  MCP URL:   {base}/mcp   (anonymous access on for the demo)\n"
        )
