"""Flash messages that are always plain text, whatever the cookie says.

Django's cookie storage records whether a message was marked safe and restores that flag when
it reads the cookie back, so anyone who can sign a cookie (a leaked SECRET_KEY) can make the
admin render raw HTML. This project never needs HTML in a message, so every message read back
from storage is plain text and the templates escape it.
"""

from __future__ import annotations

from typing import Any

from django.contrib.messages.storage.fallback import FallbackStorage
from django.utils.safestring import SafeData


class PlainTextFallbackStorage(FallbackStorage):
    """Django's default storage (cookie, then session) with the "safe" flag dropped on reading."""

    def _get(self, *args: Any, **kwargs: Any) -> tuple[Any, bool]:
        messages, all_retrieved = super()._get(*args, **kwargs)
        for message in messages or ():
            if isinstance(message.message, SafeData):
                message.message = str.__str__(message.message)  # an exact str: no SafeString left
        return messages, all_retrieved
