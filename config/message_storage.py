"""Flash messages kept on the server: the admin's own links render, nothing a browser sends is trusted.

Django's admin builds its save messages with format_html ("The prompt “<a href=…>greet</a>” was
changed successfully"), marked safe, and every storage records that mark and restores it on
reading. Django's default storage puts messages in a signed cookie first: anyone holding the
signing key could forge one that renders as HTML, which is why an earlier release dropped the mark
of every message read back, and with it the admin's links (they showed as raw markup).

Messages now live in the session, which the default session engine keeps in the database: a
client cannot write there, key or no key, so the mark Django recorded is the admin's own and is
kept. A messages cookie (forged, or left by an older release) is never read. When the session
itself is kept in a cookie (the `signed_cookies` engine), it comes from the browser like any
cookie, and every message read from it is plain text again: nothing read back from a cookie is
trusted as HTML.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.messages.storage.session import SessionStorage
from django.utils.safestring import SafeData

CLIENT_SIDE_SESSION_ENGINES = frozenset({"django.contrib.sessions.backends.signed_cookies"})


def sessions_in_cookies() -> bool:
    """Whether the session engine keeps sessions in the browser (then no message is trusted as HTML)."""
    return settings.SESSION_ENGINE in CLIENT_SIDE_SESSION_ENGINES


class ServerSessionMessageStorage(SessionStorage):
    """Django's session storage; the "safe" mark is dropped when the session lives in a cookie."""

    def _get(self, *args: Any, **kwargs: Any) -> tuple[Any, bool]:
        messages, all_retrieved = super()._get(*args, **kwargs)  # type: ignore[misc]  # private, no stub
        if sessions_in_cookies():
            for message in messages or ():
                if isinstance(message.message, SafeData):
                    message.message = str.__str__(message.message)  # an exact str: no SafeString left
        return messages, all_retrieved
