"""Fixtures of the registry tests: the e-mail tests' SMTP server (a real one on loopback, aiosmtpd,
started and stopped by the test) and the team that owns a folder (the ownership tests)."""

from __future__ import annotations

import pytest

from tests.registry.smtp_server import SmtpServer

PUBLIC_URL = "https://registry.example.com"


@pytest.fixture
def smtp(settings):
    """Django sends through SMTP to a server the test runs (and may stop: an outage)."""
    server = SmtpServer()
    server.start()
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    settings.EMAIL_HOST, settings.EMAIL_PORT = "127.0.0.1", server.port
    settings.EMAIL_USE_TLS = settings.EMAIL_USE_SSL = False
    settings.EMAIL_HOST_USER = settings.EMAIL_HOST_PASSWORD = ""
    settings.EMAIL_TIMEOUT = 5
    settings.REGISTRY = {**settings.REGISTRY, "PUBLIC_URL": PUBLIC_URL}
    yield server
    server.stop()


@pytest.fixture
def team(db):
    """The support team owns `support`: one editor and one publisher in it."""
    from django.contrib.auth.models import Group

    from registry.authoring.ownership import set_folder_owner
    from tests.factories import make_user

    group = Group.objects.create(name="Support team")
    editor, publisher = make_user("Editors"), make_user("Publishers")
    for user in (editor, publisher):
        user.groups.add(group)
    set_folder_owner("support", group, acting_user=None)
    return {"group": group, "editor": editor, "publisher": publisher}
