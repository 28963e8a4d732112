"""Registrations nobody used: deleted after OAUTH_UNUSED_REGISTRATION_HOURS.

Anyone may register a client (RFC 7591) or name a metadata document as its client id, and each
leaves an Application row behind; most real ones are connected by a user within minutes. A
registration that after the set time has no connection to the registry, no grant, no access token
(other than its own registration token) and no refresh token never was used, and never will
be by anyone who still has its id, so `manage.py oauth_prune_registrations` deletes it. Clients
an administrator created in the admin are never touched.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone
from oauth2_provider.models import (
    get_access_token_model,
    get_application_model,
    get_grant_model,
    get_refresh_token_model,
)
from oauth2_provider.settings import oauth2_settings

from .models import OAuthConnection


def unused_registrations(older_than: timedelta | None = None):
    """Dynamically registered or metadata-document Applications created before the cut-off that
    nothing ever used."""
    if older_than is None:
        older_than = timedelta(hours=settings.OAUTH_UNUSED_REGISTRATION_HOURS)
    application = get_application_model()
    sources = [application.RegistrationSource.DCR, application.RegistrationSource.CIMD]
    used_tokens = get_access_token_model().objects.filter(application=OuterRef("pk")).exclude(
        scope=oauth2_settings.DCR_REGISTRATION_SCOPE)
    return (application.objects.filter(registration_source__in=sources, created__lt=timezone.now() - older_than)
            .exclude(Q(Exists(OAuthConnection.objects.filter(application=OuterRef("pk"))))
                     | Q(Exists(get_grant_model().objects.filter(application=OuterRef("pk"))))
                     | Q(Exists(get_refresh_token_model().objects.filter(application=OuterRef("pk"))))
                     | Q(Exists(used_tokens))))


def prune_unused(older_than: timedelta | None = None) -> int:
    """Delete the unused registrations (their registration tokens with them); returns how many."""
    count = 0
    for app in unused_registrations(older_than).iterator():
        app.delete()
        count += 1
    return count
