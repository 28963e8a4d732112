"""Legacy (2025-xx) sessions. Kept in the database so every worker process sees them; each
process fronts them with a short-lived in-memory cache (see wire/sessions.py)."""

from __future__ import annotations

from django.db import models
from django.utils.translation import gettext_lazy as _


class McpSession(models.Model):
    session_id = models.CharField(_("session id"), max_length=64, primary_key=True)
    protocol_version = models.CharField(_("protocol version"), max_length=16)
    client_info = models.JSONField(_("client info"), default=dict, blank=True)
    client_capabilities = models.JSONField(_("client capabilities"), default=dict, blank=True)
    # The registry client that opened the session (None = anonymous); a session is only ever
    # used with the same credentials it was opened with.
    client_id = models.BigIntegerField(_("client id"), null=True, blank=True)
    # Anonymous sessions only: the caller's network (sessions.peer_key), which bounds how many
    # sessions one anonymous caller may hold.
    peer = models.CharField(_("peer"), max_length=64, blank=True, default="")
    created = models.DateTimeField(_("created"), auto_now_add=True)
    last_seen = models.DateTimeField(_("last seen"), auto_now_add=True, db_index=True)
    ended = models.BooleanField(_("ended"), default=False)
    subscriptions = models.JSONField(_("subscriptions"), default=list, blank=True)
    log_level = models.CharField(_("log level"), max_length=16, default="info")

    class Meta:
        verbose_name = _("MCP session")
        verbose_name_plural = _("MCP sessions")
        indexes = [models.Index(fields=["client_id", "peer", "last_seen"], name="mcp_session_owner_idx")]

    def __str__(self) -> str:
        return f"{self.session_id[:8]}… ({self.protocol_version}{', ended' if self.ended else ''})"


class CredentialChange(models.Model):
    """A change to what lets clients be served (registry.signals.credentials_changed), kept so
    that every process re-checks the streams it holds for them (mcp_endpoint/notify/revocation.py),
    whether or not the channel layer is up. Rows are pruned after an hour: a stream still open
    by then has been re-checked at its keep-alive ticks anyway."""

    created = models.DateTimeField(_("created"), auto_now_add=True, db_index=True)
    client_ids = models.JSONField(_("client ids"), default=list, blank=True)
    token_checksums = models.JSONField(_("token checksums"), default=list, blank=True)

    class Meta:
        verbose_name = _("credential change")
        verbose_name_plural = _("credential changes")

    def __str__(self) -> str:
        return f"#{self.pk}: clients {self.client_ids}, {len(self.token_checksums)} token(s)"
