"""Which McpClient an OAuth grant stands for, and what a group's users get by default."""

from __future__ import annotations

from django.conf import settings
from django.contrib.auth.models import Group
from django.db import models
from django.utils.translation import gettext_lazy as _

from registry.models import McpClient
from registry.models.base import PRODUCTION, label_name_validator


class GroupDefault(models.Model):
    """What a user of this group is served when they connect an assistant through OAuth.

    Applied once, when the (application, user) pair first gets a token; edit the MCP client
    row afterwards to change that one connection."""

    group = models.OneToOneField(
        Group, verbose_name=_("group"), on_delete=models.CASCADE, related_name="oauth_default",
    )
    label = models.CharField(_("label"), max_length=40, default=PRODUCTION, validators=[label_name_validator])
    scope_tags = models.CharField(
        _("scope tags"), max_length=500, blank=True,
        help_text=_("Comma-separated tags; if set, only entries with one are served."),
    )
    priority = models.IntegerField(
        _("priority"), default=0, help_text=_("When a user is in several groups, the highest wins."),
    )

    class Meta:
        ordering = ["-priority", "group__name"]
        verbose_name = _("OAuth default for a group")
        verbose_name_plural = _("OAuth defaults for groups")  # not Django's "<translated noun>s"

    def __str__(self) -> str:
        return f"{self.group.name}: {self.label}"


class OAuthConnection(models.Model):
    """One (application, user) pair and the McpClient row that its tokens are served as."""

    application = models.ForeignKey(
        "oauth2_provider.Application", verbose_name=_("application"), on_delete=models.CASCADE,
        related_name="mcp_connections",
    )
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name=_("user"), on_delete=models.CASCADE,
        related_name="mcp_connections",
    )
    client = models.OneToOneField(
        McpClient, verbose_name=_("client"), on_delete=models.CASCADE, related_name="oauth_connection",
    )
    created_at = models.DateTimeField(_("created at"), auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["application", "user"], name="unique_oauth_connection")]
        verbose_name = _("OAuth connection")
        verbose_name_plural = _("OAuth connections")

    def __str__(self) -> str:
        return self.client.name


class ExchangedCode(models.Model):
    """An authorization code that was exchanged for tokens, kept so that presenting it again
    revokes them (RFC 6749 §4.1.2: a code used twice was stolen by one of its users). The code
    itself is not kept, only its SHA-256; rows go once the tokens it gave could have expired."""

    code_checksum = models.CharField(_("code checksum"), max_length=64, unique=True)
    application = models.ForeignKey("oauth2_provider.Application", on_delete=models.CASCADE, related_name="+",
                                    verbose_name=_("application"))
    access_token_checksum = models.CharField(_("access token checksum"), max_length=64, blank=True)
    token_family = models.UUIDField(_("token family"), null=True, blank=True)
    exchanged_at = models.DateTimeField(_("exchanged at"), auto_now_add=True, db_index=True)

    class Meta:
        verbose_name = _("exchanged authorization code")
        verbose_name_plural = _("exchanged authorization codes")

    def __str__(self) -> str:
        return self.code_checksum[:12]
