from typing import Any

from django.apps import AppConfig
from django.utils.translation import gettext_lazy as _


def _forget_on_commit(sender: Any, **kwargs: Any) -> None:
    """A connection re-labelled or revoked, or a token deleted: this process stops serving the
    cached answer at once (other processes within the cache's few seconds)."""
    from django.db import transaction

    from .bearer import forget_cached

    transaction.on_commit(forget_cached)


def _public_clients_hold_no_secret(sender: Any, instance: Any, raw: bool = False, **kwargs: Any) -> None:
    """A public client never authenticates with a secret, so none is stored for it: the toolkit
    would generate one and hash it with the password hasher (a million iterations, 1.9 s of CPU
    for every anonymous POST /register), for nothing."""
    if not raw and instance.client_type == instance.CLIENT_PUBLIC and instance._state.adding:
        instance.client_secret = ""
        instance.hash_client_secret = False


def _revoke_deleted_connection(sender: Any, instance: Any, **kwargs: Any) -> None:
    """Deleting an OAuth connection (or its MCP client row, which deletes it) revokes every token
    and pending code of that (application, user) pair: otherwise the next token use would create
    a fresh row with the group's defaults, undoing the deletion."""
    from oauth2_provider.models import get_access_token_model, get_grant_model, get_refresh_token_model

    pair = {"application_id": instance.application_id, "user_id": instance.user_id}
    for refresh in get_refresh_token_model().objects.filter(revoked__isnull=True, **pair):
        refresh.revoke()
    get_access_token_model().objects.filter(**pair).delete()
    get_grant_model().objects.filter(**pair).delete()


class OAuthConfig(AppConfig):
    name = "oauth"
    label = "oauth"
    verbose_name = _("OAuth connections")
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.core import checks
        from django.db.models.signals import post_delete, post_save, pre_save
        from oauth2_provider.models import get_access_token_model, get_application_model

        from registry.models import McpClient

        from .models import OAuthConnection

        post_save.connect(_forget_on_commit, sender=McpClient, dispatch_uid="oauth.client_saved")
        post_delete.connect(_forget_on_commit, sender=McpClient, dispatch_uid="oauth.client_deleted")
        post_delete.connect(_forget_on_commit, sender=get_access_token_model(), dispatch_uid="oauth.token_deleted")
        pre_save.connect(_public_clients_hold_no_secret, sender=get_application_model(),
                         dispatch_uid="oauth.public_clients_hold_no_secret")
        post_delete.connect(_revoke_deleted_connection, sender=OAuthConnection,
                            dispatch_uid="oauth.revoke_deleted_connection")

        from . import credentials, metadata_documents

        # `manage.py check` warns, and the process logs once, when a toolkit name that keeps a
        # metadata-document fetch refused for capacity from backing its URL off is gone.
        checks.register(metadata_documents.check_toolkit_names, checks.Tags.compatibility)
        if metadata_documents.toolkit_names_missing():
            metadata_documents.log_fallback()
        credentials.connect()  # revocations end open streams at once, in every process
