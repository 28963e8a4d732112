from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


def _forget_on_commit(sender: Any, **kwargs: Any) -> None:
    """A connection re-labelled or revoked, or a token deleted: this process stops serving the
    cached answer at once (other processes within the cache's few seconds)."""
    from django.db import transaction

    from .bearer import forget_cached

    transaction.on_commit(forget_cached)


class OAuthConfig(AppConfig):
    name = "oauth"
    label = "oauth"
    verbose_name = _("OAuth connections")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save
        from oauth2_provider.models import get_access_token_model

        from registry.models import McpClient

        post_save.connect(_forget_on_commit, sender=McpClient, dispatch_uid="oauth.client_saved")
        post_delete.connect(_forget_on_commit, sender=McpClient, dispatch_uid="oauth.client_deleted")
        post_delete.connect(_forget_on_commit, sender=get_access_token_model(), dispatch_uid="oauth.token_deleted")

        from . import credentials

        credentials.connect()  # revocations end open streams at once, in every process
