"""A messages cookie signed with the key (forged, if the key leaked) never renders raw HTML."""

from __future__ import annotations

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage
from django.test import RequestFactory
from django.utils.safestring import mark_safe

pytestmark = pytest.mark.django_db
PAYLOAD = '<img src=x onerror="alert(1)">'


def signed_messages_cookie(*messages: Message) -> str:
    storage = CookieStorage(RequestFactory().get("/"))
    return storage._encode(list(messages))


def test_a_message_marked_safe_in_the_cookie_is_escaped_in_the_admin(client, superuser):
    client.force_login(superuser)
    client.cookies[CookieStorage.cookie_name] = signed_messages_cookie(Message(constants.INFO, mark_safe(PAYLOAD)))
    page = client.get("/admin/").content.decode()
    assert PAYLOAD not in page
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in page


def test_plain_messages_still_show(client, superuser):
    client.force_login(superuser)
    client.cookies[CookieStorage.cookie_name] = signed_messages_cookie(Message(constants.SUCCESS, "Saved & done"))
    assert "Saved &amp; done" in client.get("/admin/").content.decode()
