"""django-oauth-toolkit's request validator, plus RFC 6749 §4.1.2: a reused code revokes.

The toolkit refuses an authorization code presented a second time, but leaves the tokens the
first exchange gave in force, although the second use shows the code leaked and either party may
be the thief. :class:`RegistryValidator` records each exchange (:class:`oauth.models.ExchangedCode`)
and, when a code it has seen is presented again, revokes that exchange's access token and the
whole refresh-token family rotated from it.

It also keeps a client-metadata-document fetch refused for capacity (its host or address busy,
:class:`oauth.metadata_documents.CapacityRefused`) from backing the client's URL off like a failure
(:meth:`RegistryValidator._load_application`).
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta
from typing import Any

from django.utils import timezone
from oauth2_provider.models import get_access_token_model, get_refresh_token_model
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings

from .metadata_documents import capacity_refusals_not_backed_off
from .models import ExchangedCode

log = logging.getLogger(__name__)


def _checksum(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


class RegistryValidator(OAuth2Validator):
    def validate_code(self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any) -> bool:
        valid = super().validate_code(client_id, code, client, request, *args, **kwargs)
        if not valid and code and client is not None:
            revoke_reused(code, client)
        return valid

    def _load_application(self, client_id: str, request: Any) -> Any:
        """The toolkit's lookup, which fetches a metadata-document client's URL on first sight
        (``cimd.resolve_cimd_application``) and when it is stale (``cimd.refresh_if_stale``), and
        backs the URL off for a minute whatever stopped the fetch. A refusal because the URL's
        host or address is busy is lifted from that backoff here: the client gets in as soon as
        the host has a free place. ``_load_application`` is private to the toolkit, so
        :func:`oauth.metadata_documents.toolkit_names_missing` checks it at start-up; if it is
        gone, this is never called and the refusal is backed off as before (``manage.py check``
        warns, oauth.W001)."""
        with capacity_refusals_not_backed_off():
            return super()._load_application(client_id, request)

    def _save_bearer_token(self, token: dict[str, Any], request: Any, *args: Any, **kwargs: Any) -> Any:
        result = super()._save_bearer_token(token, request, *args, **kwargs)
        if request.grant_type == "authorization_code" and getattr(request, "code", None) and token.get("access_token"):
            record_exchange(request.code, request.client, token["access_token"])
        return result


def record_exchange(code: str, application: Any, access_token: str) -> None:
    access_checksum = _checksum(access_token)
    refresh = get_refresh_token_model().objects.filter(access_token__token_checksum=access_checksum).first()
    ExchangedCode.objects.update_or_create(
        code_checksum=_checksum(code),
        defaults={"application": application, "access_token_checksum": access_checksum,
                  "token_family": getattr(refresh, "token_family", None)})
    kept = timedelta(seconds=max(oauth2_settings.REFRESH_TOKEN_EXPIRE_SECONDS or 0,
                                 oauth2_settings.ACCESS_TOKEN_EXPIRE_SECONDS))
    ExchangedCode.objects.filter(exchanged_at__lt=timezone.now() - kept).delete()


def revoke_reused(code: str, application: Any) -> bool:
    """Revoke what an earlier exchange of ``code`` gave; whether there was one."""
    exchanged = ExchangedCode.objects.filter(code_checksum=_checksum(code), application=application).first()
    if exchanged is None:
        return False
    refresh_model = get_refresh_token_model()
    if exchanged.token_family:
        refresh_model.revoke_family(exchanged.token_family)
    for refresh in refresh_model.objects.filter(access_token__token_checksum=exchanged.access_token_checksum,
                                                revoked__isnull=True):
        refresh.revoke()
    get_access_token_model().objects.filter(token_checksum=exchanged.access_token_checksum).delete()
    log.warning("An authorization code of %s was presented again: its tokens are revoked", application.client_id)
    return True
