"""Flash messages: the admin's own links render as links; nothing a browser sends back is trusted as HTML.

Messages are kept in the server-side session, where a client cannot write. A messages cookie
(forged with a leaked signing key, or left from an older release) is never read, and with a
session engine that keeps the session in a cookie every message is plain text again.
"""

from __future__ import annotations

import pytest
from django.contrib.messages import constants
from django.contrib.messages.storage.base import Message
from django.contrib.messages.storage.cookie import CookieStorage, MessageEncoder
from django.test import RequestFactory
from django.urls import reverse
from django.utils.safestring import mark_safe

from tests.factories import make_prompt

pytestmark = pytest.mark.django_db
PAYLOAD = '<img src=x onerror="alert(1)">'
ESCAPED = "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"


def signed_messages_cookie(*messages: Message) -> str:
    storage = CookieStorage(RequestFactory().get("/"))
    return storage._encode(list(messages))


def test_the_admins_save_message_links_to_the_entry_instead_of_showing_markup(client, editor):
    prompt = make_prompt("greet")
    client.force_login(editor)
    change = reverse("admin:registry_prompt_change", args=[prompt.pk])
    data = {"name": "greet", "title": "Greeting", "description": prompt.description, "tags": "",
            "arguments-TOTAL_FORMS": 0, "arguments-INITIAL_FORMS": 0, "messages-TOTAL_FORMS": 1,
            "messages-INITIAL_FORMS": 1, "messages-0-id": prompt.messages.get().pk, "messages-0-role": "user",
            "messages-0-kind": "text", "messages-0-text": "Tell me about it.", "messages-0-position": 1,
            "messages-0-prompt": prompt.pk, "_save": "Save"}
    page = client.post(change, data, follow=True).content.decode()
    assert f'<a href="{change}">greet</a>' in page
    assert "&lt;a href=" not in page


def test_a_message_marked_safe_in_a_forged_cookie_is_never_rendered_as_html(client, superuser):
    client.force_login(superuser)
    client.cookies[CookieStorage.cookie_name] = signed_messages_cookie(Message(constants.INFO, mark_safe(PAYLOAD)))
    page = client.get("/admin/").content.decode()
    assert PAYLOAD not in page


def test_with_sessions_kept_in_cookies_every_message_is_plain_text(client, superuser, settings):
    settings.SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
    client.force_login(superuser)
    session = client.session
    session["_messages"] = MessageEncoder().encode([Message(constants.INFO, mark_safe(PAYLOAD))])
    session.save()
    client.cookies[settings.SESSION_COOKIE_NAME] = session.session_key  # what a forger with the key could send
    page = client.get("/admin/").content.decode()
    assert PAYLOAD not in page and ESCAPED in page


def test_plain_messages_still_show_escaped(client, superuser):
    from django.contrib import messages
    from django.contrib.messages.storage import default_storage

    client.force_login(superuser)
    request = RequestFactory().get("/admin/")
    request.session = client.session
    request._messages = default_storage(request)
    messages.success(request, "Saved <b>& done</b>")
    request._messages.update(None)
    request.session.save()
    assert "Saved &lt;b&gt;&amp; done&lt;/b&gt;" in client.get("/admin/").content.decode()
