"""The admin speaks each signed-in person's saved language (issue 12 §8).

Django's LocaleMiddleware picks the language from the language cookie or Accept-Language; it
runs before authentication, so it cannot know who asks. UserLanguageMiddleware runs after
AuthenticationMiddleware: for a signed-in user with a saved preference it activates that
language for the request, and puts it in the language cookie on the response, so the login
redirect, the logout page and any later request before authentication agree. Without a
preference, LocaleMiddleware's choice (cookie, then the browser's Accept-Language) stands.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.utils import translation


def supported(code: str) -> str:
    """`code` as one of settings.LANGUAGES ('zh-Hans' -> 'zh-hans'), or '' when it is not offered."""
    if not code:
        return ""
    try:
        return translation.get_supported_language_variant(code.lower())
    except LookupError:
        return ""


def browser_language(request: HttpRequest) -> str:
    """The language LocaleMiddleware picks once no cookie is left: the browser's Accept-Language, else
    LANGUAGE_CODE. "As my browser asks" deletes the cookie, so the next page speaks this one, not the
    cookie's (which `get_language_from_request` would still read on the request that deletes it)."""
    from django.utils.translation.trans_real import parse_accept_lang_header

    for code, _quality in parse_accept_lang_header(request.META.get("HTTP_ACCEPT_LANGUAGE", "")):
        if code == "*":
            break
        found = supported(code)
        if found:
            return found
    return supported(settings.LANGUAGE_CODE) or settings.LANGUAGE_CODE


def saved_language(user: Any) -> str:
    """The language `user` chose in the admin ('' = none saved, follow the browser)."""
    if user is None or not getattr(user, "is_authenticated", False):
        return ""
    from registry.models import EditorPreference

    code = EditorPreference.objects.filter(user_id=user.pk).values_list("language", flat=True).first()
    return supported(code or "")


def save_language(user: Any, code: str) -> str:
    """Store `user`'s choice ('' clears it); returns the stored code."""
    from registry.models import EditorPreference

    code = supported(code)
    EditorPreference.objects.update_or_create(user=user, defaults={"language": code})
    return code


def set_language_cookie(response: HttpResponse, code: str) -> None:
    """The same cookie Django's own set_language view writes, so LocaleMiddleware reads it next time."""
    if code:
        response.set_cookie(
            settings.LANGUAGE_COOKIE_NAME, code, max_age=settings.LANGUAGE_COOKIE_AGE,
            path=settings.LANGUAGE_COOKIE_PATH, domain=settings.LANGUAGE_COOKIE_DOMAIN,
            secure=settings.LANGUAGE_COOKIE_SECURE, httponly=settings.LANGUAGE_COOKIE_HTTPONLY,
            samesite=settings.LANGUAGE_COOKIE_SAMESITE,
        )
    else:
        response.delete_cookie(settings.LANGUAGE_COOKIE_NAME, path=settings.LANGUAGE_COOKIE_PATH,
                               domain=settings.LANGUAGE_COOKIE_DOMAIN, samesite=settings.LANGUAGE_COOKIE_SAMESITE)


class UserLanguageMiddleware:
    """After AuthenticationMiddleware: a signed-in user's saved language wins over cookie and browser."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        asked_by = user.pk if user is not None and user.is_authenticated else None
        code = saved_language(user) if asked_by is not None else ""
        chosen_by_locale = translation.get_language()
        if code:
            translation.activate(code)
            request.LANGUAGE_CODE = code
        try:
            response = self.get_response(request)
        finally:
            # The thread goes back to what LocaleMiddleware chose, so nothing after this request
            # in the same thread speaks this user's language by accident.
            if code and chosen_by_locale:
                translation.activate(chosen_by_locale)
        if code:
            response.headers.setdefault("Content-Language", code)  # a view that speaks another one says so
        if getattr(request, "registry_language_saved", False):
            return response  # the language page has written the cookie itself
        # The view may have signed someone in (the login redirect carries their language on).
        user = getattr(request, "user", None)
        answered_for = user.pk if user is not None and user.is_authenticated else None
        if answered_for is not None and answered_for != asked_by:
            code = saved_language(user)
        if answered_for is not None and code and request.COOKIES.get(settings.LANGUAGE_COOKIE_NAME) != code:
            set_language_cookie(response, code)
        return response
